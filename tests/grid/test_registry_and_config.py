"""The registry agrees with MANIFEST.md; the config schema (shipped in the package) agrees with
the registry and the encoder, and rejects bad configuration naming the file, the key and the
allowed values, in one line each."""

from __future__ import annotations

import copy
import re

import pytest
import yaml
from conftest import REPO

from dperm.config import ConfigError, schema, validate
from dperm.datasets import registry
from dperm.datasets.encode import PROFILE_CHOICES, PROFILE_DEFAULTS

NAMES_WE_PROMISED = {"adult", "bank", "bank-additional", "bank-dpagd", "kddcup99", "kddcup99-full",
                     "ipums-us", "ipums-br", "wine", "bike", "credit"}


def _manifest_rows(mirror):
    """Stored path -> (rows, content sha256) from MANIFEST.md's tables."""
    rows = {}
    for line in (mirror / "MANIFEST.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 7 or not cells[0].startswith("`") or "/" not in cells[0]:
            continue
        path = cells[0].strip("`")
        hashes = [c.strip("`") for c in cells if re.fullmatch(r"`[0-9a-f]{64}`", c)]
        count = next((c for c in cells[1:] if re.fullmatch(r"[\d,]+", c)), None)
        rows[path] = (int(count.replace(",", "")) if count else None, hashes[-1] if hashes else None)
    return rows


def test_dataset_keys_are_exactly_the_promised_names():
    assert set(registry.DATASET_KEYS) == NAMES_WE_PROMISED


def test_registry_hashes_and_rows_match_the_manifest(mirror):
    manifest = _manifest_rows(mirror)
    checked = 0
    for record in registry.DATASETS.values():
        for raw in record.files:
            stored = next((p for p in (raw.mirror_path + ".gz", raw.mirror_path) if p in manifest), None)
            if stored is None:
                assert raw.sha256 is None, f"{raw.name} has a hash but no manifest entry"
                continue
            rows, content_hash = manifest[stored]
            assert raw.rows == rows, raw.name
            assert raw.sha256 == content_hash, raw.name
            checked += 1
    assert checked >= 11


def test_every_dataset_has_a_source_and_a_label():
    for record in registry.DATASETS.values():
        assert record.sources, record.key
        assert record.task in ("classification", "regression")
        if record.task == "classification":
            assert record.positive, record.key


def _schema():
    return schema("config")


def test_schema_enumerates_the_registry_and_the_encoder_options():
    schema = _schema()
    named, synthetic = schema["$defs"]["dataset"]["anyOf"]
    assert named["enum"] == list(registry.DATASET_KEYS)
    assert synthetic["pattern"].strip("^$") == registry_synthetic_regex()
    options = schema["$defs"]["options"]["properties"]
    assert set(options) == set(PROFILE_DEFAULTS)
    for key, allowed in PROFILE_CHOICES.items():
        assert options[key]["enum"] == list(allowed)
    assert set(schema["$defs"]["profile"]["properties"]) == set(PROFILE_DEFAULTS) | {"per_dataset"}


def registry_synthetic_regex():
    from dperm.datasets.synthetic import KEY_REGEX

    return KEY_REGEX.replace("(?:", "(")


def _validate(config):
    return validate(copy.deepcopy(config), "config", "my-config.yaml")


def test_shipped_configs_validate_and_get_defaults():
    for path in (REPO / "config" / "config.yaml", REPO / ".test" / "config" / "config.yaml"):
        config = _validate(yaml.safe_load(path.read_text()))
        assert config["data"]["download"] in ("auto", "always", "never")
        assert "default" in config["profiles"]
    filled = _validate({})
    assert filled["data"] == {"mirror": None, "download": "auto", "timeout": 60}
    assert filled["profiles"] == {"default": {}}


@pytest.mark.parametrize("config, fragment", [
    ({"datasets": ["adult", "mnist"]}, "my-config.yaml: datasets[1]: 'mnist' is not allowed; allowed: ['adult', 'bank'"),
    ({"data": {"download": "sometimes"}}, "data.download: 'sometimes' is not allowed; allowed: ['auto', 'always', 'never']"),
    ({"profiles": {"default": {"scale": "zscore"}}}, "profiles.default.scale: 'zscore' is not allowed; allowed: ['minmax', 'public', 'none']"),
    ({"profiles": {"default": {"rownorm": "unit"}}}, "profiles.default: unknown key(s) ['rownorm']; allowed keys: ['bias'"),
    ({"profiles": {"default": {"per_dataset": {"adullt": {}}}}}, "profiles.default.per_dataset: 'adullt' is not allowed; allowed: ['adult'"),
    ({"colour": 1}, "(top level): unknown key(s) ['colour']; allowed keys: ['audit', 'data', 'datasets'"),
    ({"papers": ["Lee2018"]}, "papers[0]: 'Lee2018'"),
])
def test_bad_config_is_rejected_with_the_allowed_values(config, fragment):
    with pytest.raises(ConfigError) as err:
        _validate(config)
    message = str(err.value)
    assert fragment in message
    assert len(message.splitlines()) <= 3  # one line per violation, not a schema dump
