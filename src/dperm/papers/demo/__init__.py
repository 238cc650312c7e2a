"""The walking skeleton of the run protocol: DP-SGD against the non-private optimum and the
majority label on one small dataset (``config/papers/demo.yaml``; target ``snakemake demo``).
It has no tables or figures of its own beyond the generic ones its config declares."""

from __future__ import annotations

TITLE = "Demo: DP-SGD vs NonPrivate and Majority"
