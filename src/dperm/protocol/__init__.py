"""The run protocol: how a table cell's fits are made and recorded.

A *cell* is one (paper, experiment, dataset, model, algorithm, privacy setting); its file holds
one row per fit (fold × repeat × draw). The protocol's concepts, one module each:

* :mod:`.settings` — privacy-setting tokens (``0.4``, ``inf``, ``T1000``) as file names spell them;
* :mod:`.seeds` — every seed derived with ``SeedSequence`` from stable integers (crc32 of names),
  so a cell's records are the same whatever the job order or the number of cores;
* :mod:`.splits` — train/test splits (k-fold, holdout, full) of one experiment and dataset;
* :mod:`.metrics` — what is measured on a fit (accuracy, losses, the learning guard's
  quantities, and the metric hooks an experiment may ask for);
* :mod:`.columns` — the record columns and the rows of one fit;
* :mod:`.runner` — running the cells of a job into records.

This package's ``__init__`` imports nothing: a process that needs one concept (the settings of a
cell file's name, say) does not load numpy and pandas for the others.
"""
