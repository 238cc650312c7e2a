"""Privacy primitives: mechanisms, calibrations, accountants and statistical audits.

One concept per module; every mechanism states its adjacency, the sensitivity it needs and the
guarantee it gives. Functions that draw take an explicit ``rng: np.random.Generator``.

* :mod:`.gaussian` — exact Gaussian privacy profile and σ calibrations (classical, Zhang, Zhao, analytic)
* :mod:`.laplace` — Laplace and ℓ2-"Laplace" (Gamma-norm) noise
* :mod:`.noisy_max` — report-noisy-max/min (exponential, Laplace or Gumbel noise) and DP-AGD's buggy form
* :mod:`.exponential` — exponential mechanism
* :mod:`.zcdp`, :mod:`.zcdp_filter` — zCDP conversions and a fixed-budget zCDP filter
* :mod:`.composition`, :mod:`.amplification` — advanced composition, subsampling amplification
* :mod:`.rdp`, :mod:`.moments` — RDP accountant for the sampled Gaussian; Abadi's moments accountant
* :mod:`.audit` — Clopper–Pearson ε lower bounds from runs on neighbouring inputs
"""

from .amplification import (
    amplify_linear,
    amplify_linear_inverse,
    amplify_subsampling,
    amplify_subsampling_inverse,
)
from .audit import AuditResult, audit_outputs, clopper_pearson, epsilon_lower_bound
from .composition import advanced_composition, advanced_composition_split
from .exponential import exponential_mechanism, exponential_mechanism_probabilities
from .gaussian import (
    gaussian_delta,
    gaussian_noise,
    gaussian_sigma_analytic,
    gaussian_sigma_classical,
    gaussian_sigma_zhang,
    gaussian_sigma_zhao,
)
from .laplace import l2_laplace_noise, laplace_noise, laplace_scale
from .moments import moments_accountant_epsilon, moments_log_moments
from .noisy_max import (
    noisy_max_scale,
    report_noisy_max,
    report_noisy_min,
    report_noisy_min_reference,
)
from .rdp import (
    DEFAULT_RDP_ORDERS,
    epsilon_sampled_gaussian,
    noise_multiplier_for_epsilon,
    rdp_sampled_gaussian,
    rdp_to_epsilon,
    smallest_noise,
)
from .zcdp import (
    bounded_range_epsilon_for_zcdp,
    gaussian_sigma_for_zcdp,
    pure_dp_epsilon_for_zcdp,
    zcdp_from_dp,
    zcdp_of_bounded_range,
    zcdp_of_gaussian,
    zcdp_of_pure_dp,
    zcdp_to_dp,
)
from .zcdp_filter import BudgetExceededError, Charge, ZCDPFilter

__all__ = [
    "AuditResult", "BudgetExceededError", "Charge", "DEFAULT_RDP_ORDERS", "ZCDPFilter",
    "advanced_composition", "advanced_composition_split",
    "amplify_linear", "amplify_linear_inverse", "amplify_subsampling", "amplify_subsampling_inverse",
    "audit_outputs", "clopper_pearson", "epsilon_lower_bound",
    "epsilon_sampled_gaussian", "noise_multiplier_for_epsilon", "smallest_noise", "rdp_sampled_gaussian",
    "rdp_to_epsilon",
    "exponential_mechanism", "exponential_mechanism_probabilities",
    "gaussian_delta", "gaussian_noise", "gaussian_sigma_analytic", "gaussian_sigma_classical",
    "gaussian_sigma_zhang", "gaussian_sigma_zhao", "gaussian_sigma_for_zcdp",
    "l2_laplace_noise", "laplace_noise", "laplace_scale",
    "moments_accountant_epsilon", "moments_log_moments",
    "noisy_max_scale", "report_noisy_max", "report_noisy_min", "report_noisy_min_reference",
    "pure_dp_epsilon_for_zcdp", "zcdp_from_dp", "zcdp_of_gaussian", "zcdp_of_pure_dp", "zcdp_to_dp",
    "bounded_range_epsilon_for_zcdp", "zcdp_of_bounded_range",
]
