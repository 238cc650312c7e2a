"""Public bounds: each attribute's range and category list as the dataset's documentation (or the
attribute's definition) gives them, never as the data show them (docs/privacy.md#public-bounds).

``scale: public`` (:mod:`.encode`) maps a numeric attribute to [0, 1] with its declared
:class:`Bound`, clipping values outside it (and counting them), and one-hot encodes a categorical
attribute over its declared categories. Min-max scaling with the data's own minimum and maximum
(``scale: minmax``) reads the private rows, test folds included; these bounds do not.

Sources, in order of preference:

* the dataset's own documentation (the ``.names`` / ``-names.txt`` / ``Readme.txt`` files shipped
  with it on the UCI repository, or its UCI page), cited per attribute;
* where it gives no range, a property of the attribute's definition (an age 0–120, a fraction
  0–1, a day of the month 1–31, the 168 hours of a week);
* where the definition has no upper end (amounts of money, counts, durations), a cap declared
  here, stated as such, with a logarithmic transform (``log1p``: x -> log(1 + x); signed amounts
  ``slog1p``: x -> sign(x)·log(1 + |x|)) so that a generous cap costs little resolution. Values
  beyond a cap are clipped and counted in the prepared provenance.

An attribute with no defensible public bound is listed in :data:`UNBOUNDED` with the reason;
``scale: public`` refuses its dataset, naming it. A categorical attribute without a documented
category list (:data:`UNLISTED`) is refused the same way: building the list from the data would
reveal which categories occur (a category held by one row appears or vanishes with that row).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TRANSFORMS = ("linear", "log1p", "slog1p")
DOC = "docs/privacy.md#public-bounds"


@dataclass(frozen=True)
class Bound:
    """A declared range [lo, hi] of a numeric attribute, how values are mapped onto [0, 1] within
    it, and where the range comes from."""

    lo: float
    hi: float
    source: str
    transform: str = "linear"

    def __post_init__(self):
        if self.transform not in TRANSFORMS:
            raise ValueError(f"transform {self.transform!r}; allowed: {TRANSFORMS}")
        if not (np.isfinite(self.lo) and np.isfinite(self.hi) and self.lo < self.hi):
            raise ValueError(f"a bound needs finite lo < hi; got [{self.lo}, {self.hi}]")
        if self.transform == "log1p" and self.lo < 0:
            raise ValueError(f"log1p needs lo >= 0; got {self.lo}")

    def as_dict(self) -> dict:
        return {"lo": self.lo, "hi": self.hi, "transform": self.transform, "source": self.source}


def _t(values: np.ndarray, transform: str) -> np.ndarray:
    if transform == "log1p":
        return np.log1p(values)
    if transform == "slog1p":
        return np.sign(values) * np.log1p(np.abs(values))
    return values


def scale_public(block: np.ndarray, bounds: list[Bound]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Columns of ``block`` clipped to their bounds and mapped onto [0, 1]; returns the scaled
    block and, per column, how many values lay below ``lo`` and above ``hi``. Every output value
    is in [0, 1] exactly (the ends map to 0 and 1)."""
    block = np.asarray(block, dtype=np.float64)
    scaled = np.empty_like(block)
    below = np.zeros(block.shape[1], dtype=np.int64)
    above = np.zeros(block.shape[1], dtype=np.int64)
    for j, bound in enumerate(bounds):
        column = block[:, j]
        below[j], above[j] = int(np.sum(column < bound.lo)), int(np.sum(column > bound.hi))
        clipped = np.clip(column, bound.lo, bound.hi)
        lo, hi = _t(np.array([bound.lo, bound.hi]), bound.transform)
        scaled[:, j] = np.clip((_t(clipped, bound.transform) - lo) / (hi - lo), 0.0, 1.0)
    return scaled, below, above


# -- sources -------------------------------------------------------------------------------------

ADULT_NAMES = "adult.names (UCI Adult)"
BANK_NAMES = "bank-names.txt (UCI Bank Marketing, bank.zip)"
BANK_ADD_NAMES = "bank-additional-names.txt (UCI Bank Marketing, bank-additional.zip)"
KDD_TASK = "KDD Cup 1999 task description (kdd.ics.uci.edu/databases/kddcup99/task.html)"
BIKE_README = "Readme.txt (UCI Bike Sharing)"
WINE_NAMES = "winequality.names (UCI Wine Quality)"

AGE = "an age in years: 0-120 by definition"
CAP = "declared cap, not from the data ({}); values above it are clipped and counted"


def _age(source: str = AGE, lo: float = 0.0) -> Bound:
    return Bound(lo, 120.0, source)


def _count(cap: float, what: str, lo: float = 0.0) -> Bound:
    return Bound(lo, cap, f"{what}: a count >= {lo:g}; " + CAP.format(f"{cap:g}"), "log1p")


def _flag(what: str, source: str) -> Bound:
    return Bound(0.0, 1.0, f"{what}: 1 or 0 ({source})")


def _rate(what: str, source: str) -> Bound:
    return Bound(0.0, 1.0, f"{what}: a fraction of connections, 0-1 by definition ({source})")


# -- declared bounds, per dataset ----------------------------------------------------------------

_ADULT = {
    "age": Bound(17.0, 120.0, f"{ADULT_NAMES}: the extract keeps AAGE>16, so age >= 17; 120: {AGE}"),
    "fnlwgt": Bound(1.0, 3e8, f"{ADULT_NAMES}: the extract keeps AFNLWGT>1; a record's weight is the number of "
                              "people it stands for, which cannot exceed the population the CPS weights are "
                              "controlled to (the US civilian noninstitutional population, about 2e8 in 1994); "
                              + CAP.format("3e8"), "log1p"),
    "education-num": Bound(1.0, 16.0, f"{ADULT_NAMES}: education has 16 listed levels, numbered 1-16"),
    "capital-gain": Bound(0.0, 1e6, "a person's capital gains in US dollars, >= 0; " + CAP.format("1e6 USD"),
                          "log1p"),
    "capital-loss": Bound(0.0, 1e6, "a person's capital losses in US dollars, >= 0; " + CAP.format("1e6 USD"),
                          "log1p"),
    "hours-per-week": Bound(1.0, 168.0, f"{ADULT_NAMES}: the extract keeps HRSWK>0; a week has 168 hours"),
}

_BANK_COMMON = {
    "age": _age(),
    "duration": Bound(0.0, 86_400.0, f"{BANK_NAMES}: last contact duration in seconds, >= 0; "
                                     + CAP.format("one day, 86,400 s"), "log1p"),
    "campaign": _count(1_000, f"{BANK_NAMES}: contacts in this campaign, including the last", lo=1.0),
    "previous": _count(1_000, f"{BANK_NAMES}: contacts before this campaign"),
}
_BALANCE = Bound(-1e6, 1e6, f"{BANK_NAMES}: average yearly balance in euros (signed); "
                            + CAP.format("|balance| <= 1e6 EUR"), "slog1p")
_PDAYS_CAP = CAP.format(f"999 days, the never-contacted code of the same attribute in {BANK_ADD_NAMES}")
_PDAYS_FULL = Bound(-1.0, 999.0, f"{BANK_NAMES}: days since the last contact of a previous campaign, -1 = "
                                 f"never contacted; {_PDAYS_CAP}")
_BANK = {
    **_BANK_COMMON,
    "balance": _BALANCE,
    "day": Bound(1.0, 31.0, f"{BANK_NAMES}: last contact day of the month, 1-31 by definition"),
    "pdays": _PDAYS_FULL,
}
_BANK_ADDITIONAL = {
    **{k: Bound(b.lo, b.hi, b.source.replace(BANK_NAMES, BANK_ADD_NAMES), b.transform)
       for k, b in _BANK_COMMON.items()},
    "pdays": Bound(0.0, 999.0, f"{BANK_ADD_NAMES}: days since the last contact of a previous campaign; 999 = "
                               "never contacted (the documented code, used as the upper end)"),
    "cons.conf.idx": Bound(-100.0, 100.0, f"{BANK_ADD_NAMES}: consumer confidence indicator, a balance of "
                                          "survey answers in percentage points: -100 to 100 by definition"),
    "nr.employed": Bound(0.0, 10_000.0, f"{BANK_ADD_NAMES}: number of employees (thousands) of a country of "
                                        "'~10M population' (same file): at most 10,000 thousand"),
}
# BANK.dat (Lee & Kifer's encoding of bank-full.csv, same rows): columns x0..x31. Their meaning is
# a fact about that published encoding (established by comparing the two public files column by
# column: docs/privacy.md#public-bounds); the ranges are then bank-names.txt's.
_BANK_DPAGD_NUMERIC = {
    0: _BANK["age"],
    18: _BALANCE,
    23: Bound(31.0, 391.0, f"30 x month (1-12) + day of month (1-31) of the last contact ({BANK_NAMES}: month "
                           "and day), 31-391 by definition"),
    24: _BANK["duration"],
    25: _BANK["campaign"],
    27: Bound(0.0, 999.0, f"{BANK_NAMES}: pdays with the never-contacted code -1 written as 0; "
                          + CAP.format("999 days, as for bank's pdays")),
    28: _BANK["previous"],
}
_BANK_DPAGD_INDICATORS = {  # one-hot columns of bank-full's documented categories (a reference level dropped)
    **{j: f"job={v}" for j, v in enumerate(["admin.", "unemployed", "management", "housemaid", "entrepreneur",
                                            "student", "blue-collar", "self-employed", "retired", "technician",
                                            "services"], start=1)},
    12: "marital=single", 13: "marital=married", 14: "education=primary", 15: "education=secondary",
    16: "education=tertiary", 17: "default=yes", 19: "housing=yes", 20: "loan=yes", 21: "contact=telephone",
    22: "contact=cellular", 26: "previously contacted (pdays != -1)", 29: "poutcome=other",
    30: "poutcome=failure", 31: "poutcome=success",
}
_BANK_DPAGD = {
    **{f"x{j}": b for j, b in _BANK_DPAGD_NUMERIC.items()},
    **{f"x{j}": Bound(0.0, 1.0, f"indicator of {what} ({BANK_NAMES}): 0 or 1 by definition")
       for j, what in _BANK_DPAGD_INDICATORS.items()},
}

_KDD_COUNTS = {
    "wrong_fragment": "number of wrong fragments", "urgent": "number of urgent packets",
    "hot": "number of 'hot' indicators", "num_failed_logins": "number of failed login attempts",
    "num_compromised": "number of 'compromised' conditions", "num_root": "number of root accesses",
    "num_file_creations": "number of file creation operations", "num_shells": "number of shell prompts",
    "num_access_files": "number of operations on access control files",
    "num_outbound_cmds": "number of outbound commands in an ftp session",
    "count": "connections to the same host as the current one in the past two seconds",
    "srv_count": "connections to the same service as the current one in the past two seconds",
    "dst_host_count": "connections to the same destination host (host-based window)",
    "dst_host_srv_count": "connections to the same destination service (host-based window)",
}
_KDD_FLAGS = {
    "land": "connection from/to the same host/port", "logged_in": "successfully logged in",
    "root_shell": "root shell obtained", "su_attempted": "'su root' attempted",
    "is_host_login": "login on the 'hot' list", "is_guest_login": "guest login",
}
_KDD_RATES = ("serror_rate", "srv_serror_rate", "rerror_rate", "srv_rerror_rate", "same_srv_rate", "diff_srv_rate",
              "srv_diff_host_rate", "dst_host_same_srv_rate", "dst_host_diff_srv_rate",
              "dst_host_same_src_port_rate", "dst_host_srv_diff_host_rate", "dst_host_serror_rate",
              "dst_host_srv_serror_rate", "dst_host_rerror_rate", "dst_host_srv_rerror_rate")
_KDD = {
    "duration": Bound(0.0, 1e6, f"{KDD_TASK}: length of the connection in seconds, >= 0; " + CAP.format("1e6 s"),
                      "log1p"),
    "src_bytes": Bound(0.0, 1e10, f"{KDD_TASK}: data bytes from source to destination, >= 0; "
                                  + CAP.format("1e10 bytes"), "log1p"),
    "dst_bytes": Bound(0.0, 1e10, f"{KDD_TASK}: data bytes from destination to source, >= 0; "
                                  + CAP.format("1e10 bytes"), "log1p"),
    **{k: _count(1e4, f"{KDD_TASK}: {what}") for k, what in _KDD_COUNTS.items()},
    **{k: _flag(what, KDD_TASK) for k, what in _KDD_FLAGS.items()},
    **{k: _rate(k, KDD_TASK) for k in _KDD_RATES},
}

_BIKE = {
    "temp": Bound(0.0, 1.0, f"{BIKE_README}: temperature normalised by its documented maximum (41 C), 0-1"),
    "atemp": Bound(0.0, 1.0, f"{BIKE_README}: feeling temperature normalised by its documented maximum (50 C), 0-1"),
    "hum": Bound(0.0, 1.0, f"{BIKE_README}: humidity divided by 100, 0-1"),
    "windspeed": Bound(0.0, 1.0, f"{BIKE_README}: wind speed normalised by its documented maximum (67), 0-1"),
}
_WINE = {
    "pH": Bound(0.0, 14.0, "pH: 0-14 by definition (aqueous solutions)"),
    "alcohol": Bound(0.0, 100.0, "alcohol in % by volume: 0-100 by definition"),
}

BOUNDS: dict[str, dict[str, Bound]] = {
    "adult": _ADULT, "bank": _BANK, "bank-additional": _BANK_ADDITIONAL, "bank-dpagd": _BANK_DPAGD,
    "kddcup99": _KDD, "kddcup99-full": _KDD, "bike": _BIKE, "wine": _WINE,
}

# Regression targets scaled with target_scale: public.
TARGET_BOUNDS: dict[str, Bound] = {
    "wine": Bound(0.0, 10.0, f"{WINE_NAMES}: quality graded between 0 (very bad) and 10 (very excellent)"),
}

_MACRO = (f"{BANK_ADD_NAMES}: a national macro-economic series (Banco de Portugal); neither the "
          "documentation nor the definition gives a range")
_IPUMS = ("Lee & Kifer's preprocessed IPUMS file: unnamed numeric columns with no published codebook, "
          "so no column's meaning, hence range, is public")
UNBOUNDED: dict[str, dict[str, str]] = {
    "bank-additional": {"emp.var.rate": _MACRO, "cons.price.idx": _MACRO, "euribor3m": _MACRO},
    "ipums-us": {f"x{j}": _IPUMS for j in range(57)},
    "ipums-br": {f"x{j}": _IPUMS for j in range(52)},
    "wine": {k: "a concentration or density with no documented range and no upper end by definition"
             for k in ("fixed_acidity", "volatile_acidity", "citric_acid", "residual_sugar", "chlorides",
                       "free_sulfur_dioxide", "total_sulfur_dioxide", "density", "sulphates")},
    "credit": {k: "the dataset's documentation is not among the mirrored files; no range is declared"
               for k in ("LIMIT_BAL", "AGE", "PAY_0", "PAY_2", "PAY_3", "PAY_4", "PAY_5", "PAY_6",
                         *(f"BILL_AMT{i}" for i in range(1, 7)), *(f"PAY_AMT{i}" for i in range(1, 7)))},
}
TARGET_UNBOUNDED: dict[str, str] = {"bike": "an hourly rental count: no documented or definitional maximum"}


# -- declared category lists -------------------------------------------------------------------

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
CATEGORIES: dict[str, dict[str, tuple[str, ...]]] = {
    "adult": {  # adult.names lists every value
        "workclass": ("Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov",
                      "Without-pay", "Never-worked"),
        "education": ("Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm", "Assoc-voc",
                      "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate", "5th-6th", "Preschool"),
        "marital-status": ("Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
                           "Married-spouse-absent", "Married-AF-spouse"),
        "occupation": ("Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
                       "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
                       "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv", "Armed-Forces"),
        "relationship": ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"),
        "race": ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"),
        "sex": ("Female", "Male"),
        "native-country": ("United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
                           "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China", "Cuba",
                           "Iran", "Honduras", "Philippines", "Italy", "Poland", "Jamaica", "Vietnam", "Mexico",
                           "Portugal", "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan",
                           "Haiti", "Columbia", "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand",
                           "Yugoslavia", "El-Salvador", "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands"),
    },
    "bank": {  # bank-names.txt
        "job": ("admin.", "unknown", "unemployed", "management", "housemaid", "entrepreneur", "student",
                "blue-collar", "self-employed", "retired", "technician", "services"),
        "marital": ("married", "divorced", "single"),
        "education": ("unknown", "secondary", "primary", "tertiary"),
        "default": ("yes", "no"), "housing": ("yes", "no"), "loan": ("yes", "no"),
        "contact": ("unknown", "telephone", "cellular"),
        "month": _MONTHS,
        "poutcome": ("unknown", "other", "failure", "success"),
    },
    "bank-additional": {  # bank-additional-names.txt
        "job": ("admin.", "blue-collar", "entrepreneur", "housemaid", "management", "retired", "self-employed",
                "services", "student", "technician", "unemployed", "unknown"),
        "marital": ("divorced", "married", "single", "unknown"),
        "education": ("basic.4y", "basic.6y", "basic.9y", "high.school", "illiterate", "professional.course",
                      "university.degree", "unknown"),
        "default": ("no", "yes", "unknown"), "housing": ("no", "yes", "unknown"), "loan": ("no", "yes", "unknown"),
        "contact": ("cellular", "telephone"),
        "month": _MONTHS,
        "day_of_week": ("mon", "tue", "wed", "thu", "fri"),
        "poutcome": ("failure", "nonexistent", "success"),
    },
    "bike": {  # Readme.txt
        "season": ("1", "2", "3", "4"), "yr": ("0", "1"), "mnth": tuple(str(m) for m in range(1, 13)),
        "hr": tuple(str(h) for h in range(24)), "holiday": ("0", "1"), "weekday": tuple(str(d) for d in range(7)),
        "workingday": ("0", "1"), "weathersit": ("1", "2", "3", "4"),
    },
    "wine": {"color": ("red", "white")},  # winequality.names: the red and the white file
}
_KDD_SYMBOLIC = ("kddcup.names calls it symbolic and lists no values; the task description gives examples "
                 "only ('e.g. tcp, udp')")
UNLISTED: dict[str, dict[str, str]] = {
    "kddcup99": {k: _KDD_SYMBOLIC for k in ("protocol_type", "service", "flag")},
    "kddcup99-full": {k: _KDD_SYMBOLIC for k in ("protocol_type", "service", "flag")},
    "credit": {k: "the dataset's documentation is not among the mirrored files" for k in
               ("SEX", "EDUCATION", "MARRIAGE")},
}


def refusal(dataset: str, attribute: str, what: str, reason: str | None) -> str:
    why = f": {reason}" if reason else ": none is declared in dperm.datasets.bounds"
    return (f"{dataset}: public scaling needs {what} for every attribute, and attribute {attribute!r} has "
            f"none{why} ({DOC})")


SYNTHETIC = "synthetic features are Gaussian draws: no finite bound"


def public_schema(record, target: bool = False,
                  numeric: bool = True) -> tuple[list[Bound], dict[str, tuple[str, ...]], Bound | None]:
    """The declared bounds of ``record``'s numeric attributes (registry order) and the declared
    categories of its categorical ones (with ``numeric``), and its regression target's bound
    (with ``target``). Raises ValueError naming the dataset and the first attribute that has
    none."""
    synthetic = record.key.startswith("synthetic-")
    bounds, categories = [], {}
    for column in record.columns if numeric else ():
        if column.kind == "num":
            bound = BOUNDS.get(record.key, {}).get(column.name)
            if bound is None:
                reason = SYNTHETIC if synthetic else UNBOUNDED.get(record.key, {}).get(column.name)
                raise ValueError(refusal(record.key, column.name, "a public bound", reason))
            bounds.append(bound)
        else:
            listed = CATEGORIES.get(record.key, {}).get(column.name)
            if listed is None:
                reason = UNLISTED.get(record.key, {}).get(column.name)
                raise ValueError(refusal(record.key, column.name, "a documented category list", reason))
            categories[column.name] = listed
    target_bound = None
    if target:
        target_bound = TARGET_BOUNDS.get(record.key)
        if target_bound is None:
            reason = SYNTHETIC.replace("features", "targets") if synthetic else TARGET_UNBOUNDED.get(record.key)
            raise ValueError(refusal(record.key, record.target, "a public bound (target_scale: public)", reason))
    return bounds, categories, target_bound
