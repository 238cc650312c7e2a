"""The dataset registry: one record per dataset, the single source of truth for where its raw
files come from, what their content hashes are, how they are parsed and what the label is.

Hashes are of the *decompressed* content, so a file verifies whether it arrives plain or gzipped.
Row counts are data rows only.

A file's ``urls`` are tried in order when downloading. ``a.zip#b.zip#c.csv`` names a member of
a zip inside a zip; a URL whose bytes are gzip is decompressed before hashing.
"""

from __future__ import annotations

from .records import Column, Dataset, RawFile

UCI = "https://archive.ics.uci.edu"
UCI_LEGACY = f"{UCI}/ml/machine-learning-databases"
KDD = "https://kdd.ics.uci.edu/databases/kddcup99"
DPAGD = "https://raw.githubusercontent.com/ppmlguy/DP-AGD/f3309463051a7f2af70e743aa8e1e062ce0b080d/dataset"
GITHUB = "https://raw.githubusercontent.com"


def _cols(spec: str) -> tuple[Column, ...]:
    """'age:num workclass:cat ...' -> Columns (compact, and keeps file order visible)."""
    return tuple(Column(*item.split(":")) for item in spec.split())


def _dat_columns(n: int) -> tuple[Column, ...]:
    return tuple(Column(f"x{j}", "num") for j in range(n))


ADULT_COLUMNS = _cols(
    "age:num workclass:cat fnlwgt:num education:cat education-num:num marital-status:cat "
    "occupation:cat relationship:cat race:cat sex:cat capital-gain:num capital-loss:num "
    "hours-per-week:num native-country:cat"
)
BANK_COLUMNS = _cols(
    "age:num job:cat marital:cat education:cat default:cat balance:num housing:cat loan:cat "
    "contact:cat day:num month:cat duration:num campaign:num pdays:num previous:num poutcome:cat"
)
BANK_ADDITIONAL_COLUMNS = _cols(
    "age:num job:cat marital:cat education:cat default:cat housing:cat loan:cat contact:cat "
    "month:cat day_of_week:cat duration:num campaign:num pdays:num previous:num poutcome:cat "
    "emp.var.rate:num cons.price.idx:num cons.conf.idx:num euribor3m:num nr.employed:num"
)
# kddcup.names: 41 features; the three symbolic multi-valued ones are one-hot encoded, the
# symbolic 0/1 flags (land, logged_in, is_host_login, is_guest_login) are already binary.
KDD_COLUMNS = _cols(
    "duration:num protocol_type:cat service:cat flag:cat src_bytes:num dst_bytes:num land:num "
    "wrong_fragment:num urgent:num hot:num num_failed_logins:num logged_in:num "
    "num_compromised:num root_shell:num su_attempted:num num_root:num num_file_creations:num "
    "num_shells:num num_access_files:num num_outbound_cmds:num is_host_login:num "
    "is_guest_login:num count:num srv_count:num serror_rate:num srv_serror_rate:num "
    "rerror_rate:num srv_rerror_rate:num same_srv_rate:num diff_srv_rate:num "
    "srv_diff_host_rate:num dst_host_count:num dst_host_srv_count:num "
    "dst_host_same_srv_rate:num dst_host_diff_srv_rate:num dst_host_same_src_port_rate:num "
    "dst_host_srv_diff_host_rate:num dst_host_serror_rate:num dst_host_srv_serror_rate:num "
    "dst_host_rerror_rate:num dst_host_srv_rerror_rate:num"
)
KDD_DOS = ("back", "land", "neptune", "pod", "smurf", "teardrop")
WINE_COLUMNS = _cols(
    "fixed_acidity:num volatile_acidity:num citric_acid:num residual_sugar:num chlorides:num "
    "free_sulfur_dioxide:num total_sulfur_dioxide:num density:num pH:num sulphates:num "
    "alcohol:num color:cat"
)
BIKE_COLUMNS = _cols(
    "season:cat yr:cat mnth:cat hr:cat holiday:cat weekday:cat workingday:cat weathersit:cat "
    "temp:num atemp:num hum:num windspeed:num"
)
CREDIT_COLUMNS = _cols(
    "LIMIT_BAL:num SEX:cat EDUCATION:cat MARRIAGE:cat AGE:num PAY_0:num PAY_2:num PAY_3:num "
    "PAY_4:num PAY_5:num PAY_6:num BILL_AMT1:num BILL_AMT2:num BILL_AMT3:num BILL_AMT4:num "
    "BILL_AMT5:num BILL_AMT6:num PAY_AMT1:num PAY_AMT2:num PAY_AMT3:num PAY_AMT4:num "
    "PAY_AMT5:num PAY_AMT6:num"
)

_KDD_TEST = RawFile(
    "corrected", "kddcup99/corrected", "test", 311_029,
    "547dfb9c0f0dc1d9944219ec79e851191faebaeb8acbfa1cd171c418397052a4",
    (f"{KDD}/corrected.gz",),
)
_KDD_COMMON = dict(
    task="classification", parser="csv", columns=KDD_COLUMNS, target="attack", header=False,
    label="DoS attack (back, land, neptune, pod, smurf, teardrop) vs anything else",
    positive=KDD_DOS, default_parts=("train",), strip_target_period=True, uci_id=130,
)
_BANK_ZIP = f"{UCI}/static/public/222/bank+marketing.zip"

DATASETS: dict[str, Dataset] = {
    d.key: d
    for d in [
        Dataset(
            key="adult", title="Adult (Census Income)", task="classification",
            files=(
                RawFile("adult.data", "adult/adult.data", "train", 32_561,
                        "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
                        (f"{UCI_LEGACY}/adult/adult.data",
                         f"{GITHUB}/may-s/ID3/a1506d3bff60b97ac200708e73c5c3d5bc604f12/data/adult.data")),
                RawFile("adult.test", "adult/adult.test", "test", 16_281,
                        "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
                        (f"{UCI_LEGACY}/adult/adult.test",
                         f"{GITHUB}/vukk/lfr/ed62ba97952b233be794314ce2ed748877edfeeb/data/adult-delve/Source/adult.test.gz")),
            ),
            parser="adult", columns=ADULT_COLUMNS, target="income", header=False,
            label="income > 50K", positive=(">50K",), negative=("<=50K",),
            missing_marker="?", drop_missing=True, strip_target_period=True, uci_id=2,
            ucimlrepo={"columns": {"income": "income"}, "train_rows": 32_561},
            notes="train+test files; rows with a missing value ('?') are dropped by default",
        ),
        Dataset(
            key="bank", title="Bank Marketing (bank-full)", task="classification",
            files=(
                RawFile("bank-full.csv", "bank/bank-full.csv", "all", 45_211,
                        "d1513ec63b385506f7cfce9f2c5caa9fe99e7ba4e8c3fa264b3aaf0f849ed32d",
                        (f"{_BANK_ZIP}#bank.zip#bank-full.csv",
                         f"{UCI_LEGACY}/00222/bank.zip#bank-full.csv")),
            ),
            parser="csv", columns=BANK_COLUMNS, target="y", sep=";",
            label="client subscribed a term deposit (y = yes)", positive=("yes",), negative=("no",),
            uci_id=222,
            # ucimlrepo calls the day-of-month column "day_of_week" and writes "unknown" as NaN.
            ucimlrepo={"columns": {"day_of_week": "day"}, "nan_means": "unknown"},
            notes="'unknown' is a category of its own, as in the original files",
        ),
        Dataset(
            key="bank-additional", title="Bank Marketing (bank-additional-full)", task="classification",
            files=(
                RawFile("bank-additional-full.csv", "bank/bank-additional-full.csv", "all", 41_188,
                        "74adfc578bf77a7ff4bb1ba4a9f8709d9e3c6907342959c2c8416847e0afb4d8",
                        (f"{_BANK_ZIP}#bank-additional.zip#bank-additional/bank-additional-full.csv",
                         f"{UCI_LEGACY}/00222/bank-additional.zip#bank-additional/bank-additional-full.csv")),
            ),
            parser="csv", columns=BANK_ADDITIONAL_COLUMNS, target="y", sep=";",
            label="client subscribed a term deposit (y = yes)", positive=("yes",), negative=("no",),
            uci_id=222, notes="not served by ucimlrepo (which returns bank-full); fetched from the UCI zip",
        ),
        Dataset(
            key="bank-dpagd", title="BANK, DP-AGD encoding (BANK.dat)", task="classification",
            files=(
                RawFile("BANK.dat", "dpagd/BANK.dat", "all", 45_211,
                        "fe536a257d242b1fb78dd0e753d2c50176ef12a5dd23dfb86402f62127a3b96e",
                        (f"{DPAGD}/BANK.dat",), git_blob="ecaa9bc696acb37e46e50eb3522a6cec03a4d420"),
            ),
            parser="dat", columns=_dat_columns(32), target="label", header=False, sep=" ",
            label="product subscribed (last column = 1)", positive=("1",), negative=("0",),
            notes="Lee & Kifer's preprocessed one-hot encoding of bank-full, same row order",
        ),
        Dataset(
            key="ipums-br", title="IPUMS-BR (DP-AGD preprocessing)", task="classification",
            files=(
                RawFile("IPUMS-BR.dat", "dpagd/IPUMS-BR.dat", "all", 38_000,
                        "9bcc80cf279457d62e9025d31a05c3e494e9d6edbb2097ba935eb4926a39884a",
                        (f"{DPAGD}/IPUMS-BR.dat",), git_blob="d2232b41b79115f8fd1a441cedfa027161bc5360"),
            ),
            parser="dat", columns=_dat_columns(52), target="label", header=False, sep=" ",
            label="monthly income > $300 (last column = 1)", positive=("1",), negative=("0",),
        ),
        Dataset(
            key="ipums-us", title="IPUMS-US (DP-AGD preprocessing)", task="classification",
            files=(
                RawFile("IPUMS-US.dat", "dpagd/IPUMS-US.dat", "all", 40_000, None,
                        (f"{DPAGD}/IPUMS-US.dat",), git_blob="4dc4b720b45f718a7dd09af2d5be36d91e891c99"),
            ),
            parser="dat", columns=_dat_columns(57), target="label", header=False, sep=" ",
            label="annual income > 25K (last column = 1)", positive=("1",), negative=("0",),
            notes="no public copy reachable offline; verified by its git blob id when downloaded",
        ),
        Dataset(
            key="kddcup99", title="KDD Cup 1999 (10% training file)",
            files=(
                RawFile("kddcup.data_10_percent", "kddcup99/kddcup.data_10_percent", "train", 494_021,
                        "f8c8267ebcd9c0ed1fd7d6277fe5bfff8732e9b7db8e61b873542b2a534b6f9a",
                        (f"{KDD}/kddcup.data_10_percent.gz",
                         f"{UCI}/static/public/130/kdd+cup+1999+data.zip#kddcup.data_10_percent.gz")),
                _KDD_TEST,
            ),
            notes="10% file by default (the papers used the 4,898,431-row full file: kddcup99-full)",
            **_KDD_COMMON,
        ),
        Dataset(
            key="kddcup99-full", title="KDD Cup 1999 (full training file)",
            files=(
                RawFile("kddcup.data", "kddcup99/kddcup.data", "train", 4_898_431, None,
                        (f"{KDD}/kddcup.data.gz",
                         f"{UCI}/static/public/130/kdd+cup+1999+data.zip#kddcup.data.gz")),
                _KDD_TEST,
            ),
            notes="needs a download (about 18 MB gzipped); no sha256 is published, rows are checked",
            **_KDD_COMMON,
        ),
        Dataset(
            key="wine", title="Wine Quality (red + white)", task="regression",
            files=(
                RawFile("winequality-red.csv", "wine/winequality-red.csv", "red", 1_599,
                        "4a402cf041b025d4566d954c3b9ba8635a3a8a01e039005d97d6a710278cf05e",
                        (f"{UCI_LEGACY}/wine-quality/winequality-red.csv",)),
                RawFile("winequality-white.csv", "wine/winequality-white.csv", "white", 4_898,
                        "76c3f809815c17c07212622f776311faeb31e87610d52c26d87d6e361b169836",
                        (f"{UCI_LEGACY}/wine-quality/winequality-white.csv",)),
            ),
            parser="csv", columns=WINE_COLUMNS, target="quality", sep=";",
            label="quality score (0-10), scaled to [0, 1]", part_column="color", uci_id=186,
            ucimlrepo={"columns": {}},
            notes="the colour (file of origin) is a feature, as in ucimlrepo's 'color' column",
        ),
        Dataset(
            key="bike", title="Bike Sharing (hourly)", task="regression",
            files=(
                RawFile("hour.csv", "bike/hour.csv", "all", 17_379,
                        "e03de4ee4ef4dc376ac6e04bf829673c6269e8eba5c60fa121640fa2f829504f",
                        (f"{UCI}/static/public/275/bike+sharing+dataset.zip#hour.csv",
                         f"{UCI_LEGACY}/00275/Bike-Sharing-Dataset.zip#hour.csv")),
            ),
            parser="csv", columns=BIKE_COLUMNS, target="cnt", drop=("instant", "dteday", "casual", "registered"),
            label="hourly rental count, scaled to [0, 1]", uci_id=275,
            ucimlrepo={"columns": {}},
            notes="casual + registered = cnt, so both are dropped (they would leak the target)",
        ),
        Dataset(
            key="credit", title="Default of credit card clients", task="classification",
            files=(
                RawFile("default_of_credit_card_clients.csv", "credit/default_of_credit_card_clients.csv",
                        "all", 30_000,
                        "88bd2bd25327b52af2148b7437740aca427aaf8f0e52ad782ee8bbae44b509bd",
                        (f"{GITHUB}/dhavalptl630007/DataSets/c31a7ae62231225146d364eb057181571ebfc191/"
                         "default_of_credit_card_clients.csv",)),
            ),
            parser="csv", columns=CREDIT_COLUMNS, target="default payment next month", drop=("ID",),
            label="default payment next month = 1", positive=("1",), negative=("0",), uci_id=350,
            # ucimlrepo names the features X1..X23 and the target Y, in file order.
            ucimlrepo={"columns": "by_position"},
            notes="CSV export of the UCI .xls (same 30,000 records)",
        ),
    ]
}

# The order in which the datasets were first listed; tables list datasets in this order.
DATASET_KEYS: tuple[str, ...] = ("adult", "bank", "bank-additional", "bank-dpagd", "kddcup99",
                                 "kddcup99-full", "ipums-us", "ipums-br", "wine", "bike", "credit")
DATASETS = {key: DATASETS[key] for key in DATASET_KEYS}


def get(key: str) -> Dataset:
    """The record for ``key`` (a registered dataset, or a seeded synthetic one named by its shape,
    :mod:`.synthetic`); an unknown key is an error that lists the known ones."""
    from . import synthetic

    if synthetic.is_synthetic(key):
        return synthetic.record(key)
    try:
        return DATASETS[key]
    except KeyError:
        raise KeyError(f"unknown dataset {key!r}; known datasets: {', '.join(DATASET_KEYS)}, and "
                       f"synthetic-<logistic|linear>-n<rows>-d<features>") from None
