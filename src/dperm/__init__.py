"""dperm: reproducible experiments on differentially private empirical risk minimisation.

The package must stay importable without numpy being loaded, so that the command line can pin
BLAS/OpenMP thread counts before numpy initialises its thread pool (see ``dperm.cli``).
"""

__version__ = "0.1.0"
