"""The catalog records and their schema, and the validated-catalog cache (costopt/hardware/validated_cache.py).

The cache may change how fast a catalog loads, never what it holds: a load from the cache equals a
validated load field for field, a changed file or base file is validated again, a bad file is never
kept, and the command line prints the same bytes with a cold cache, a warm one and none.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from costopt.hardware import catalog as C
from costopt.hardware import catalog_schema as S
from costopt.hardware import validated_cache
from costopt.hardware.catalog import REFERENCE_CATALOG, load_catalog
from costopt.core.errors import InputError

PAIRS = [(C.LifeCycled, S.LifeCycled), (C.Sourced, S.Sourced), (C.ReferenceThroughput, S.ReferenceThroughput),
         (C.Gpu, S.Gpu), (C.Chassis, S.Chassis), (C.Nic, S.Nic), (C.Site, S.Site), (C.Facility, S.Facility),
         (C.CatalogInfo, S.CatalogInfo), (C.Instance, S.Instance)]


@pytest.mark.parametrize("record, schema", PAIRS, ids=[r.__name__ for r, _ in PAIRS])
def test_record_has_the_schema_fields_in_order_with_the_same_defaults(record, schema):
    rec = dataclasses.fields(record)
    assert [f.name for f in rec] == list(schema.model_fields)
    for f in rec:
        sf = schema.model_fields[f.name]
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            assert sf.is_required(), f.name
        else:
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            assert not sf.is_required(), f.name
            assert default == sf.get_default(call_default_factory=True), f.name


def test_catalog_record_has_the_schema_fields():
    assert [f.name for f in dataclasses.fields(C.Catalog)] == list(S.Catalog.model_fields)


def _cache(monkeypatch, folder):
    monkeypatch.setenv("COSTOPT_CACHE_DIR", str(folder))
    validated_cache._memo.clear()


def test_cached_load_equals_validated_load(monkeypatch, tmp_path):
    _cache(monkeypatch, tmp_path)
    first = load_catalog()
    assert len(list(tmp_path.glob("catalog-*.json"))) == 1
    validated_cache._memo.clear()  # the next load reads the file, as a new process would
    second = load_catalog()
    assert second is not first
    assert second == first
    assert json.dumps(second.model_dump()) == json.dumps(first.model_dump())
    assert second.gpus["h100-sxm"].peak_flops("amp_bf16") == 989e12  # H100 SXM dense BF16: 989 TFLOP/s


def test_second_process_loads_without_pydantic(tmp_path):
    env = {**os.environ, "COSTOPT_CACHE_DIR": str(tmp_path)}
    code = ("import sys, json; from costopt.hardware.catalog import load_catalog; c = load_catalog(); "
            "print(json.dumps({'pydantic': 'pydantic' in sys.modules, 'cat': c.model_dump()}))")
    runs = [json.loads(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                      check=True).stdout) for _ in range(2)]
    assert runs[0]["pydantic"] is True  # validated
    assert runs[1]["pydantic"] is False  # from the cache
    assert runs[0]["cat"] == runs[1]["cat"]


def test_changed_file_is_validated_again(monkeypatch, tmp_path):
    _cache(monkeypatch, tmp_path / "cache")
    p = tmp_path / "c.toml"
    text = REFERENCE_CATALOG.read_text(encoding="utf-8")
    p.write_text(text, encoding="utf-8")
    assert load_catalog(p).gpus["h100-sxm"].price_usd == load_catalog().gpus["h100-sxm"].price_usd
    price = load_catalog().gpus["h100-sxm"].price_usd
    old = f'price_usd = {price:g}'
    assert old in text  # the reference catalog writes the H100 SXM price as a plain number
    p.write_text(text.replace(old, "price_usd = 12345.5", 1), encoding="utf-8")
    changed = load_catalog(p)
    assert any(g.price_usd == 12345.5 for g in changed.gpu)
    p.write_text(text.replace(old, "price_usd = -1", 1), encoding="utf-8")
    with pytest.raises(InputError, match="price_usd"):
        load_catalog(p)


def test_changed_base_file_is_validated_again(monkeypatch, tmp_path):
    _cache(monkeypatch, tmp_path / "cache")
    base = tmp_path / "base.toml"
    base.write_text(REFERENCE_CATALOG.read_text(encoding="utf-8"), encoding="utf-8")
    over = tmp_path / "quote.toml"
    over.write_text('[catalog]\nname = "quote"\ndate = "2026-01-01"\nbase = "base.toml"\n', encoding="utf-8")
    assert load_catalog(over).catalog.name == "quote"
    nics = len(load_catalog(over).nic)
    text = base.read_text(encoding="utf-8")
    cut = text.rindex("[[nic]]")  # drop the last NIC of the base: the overlay must lose it too
    base.write_text(text[:cut], encoding="utf-8")
    assert len(load_catalog(over).nic) == nics - 1


def test_bad_file_is_never_cached_and_keeps_its_message(monkeypatch, tmp_path):
    _cache(monkeypatch, tmp_path / "cache")
    p = tmp_path / "bad.toml"
    p.write_text(REFERENCE_CATALOG.read_text(encoding="utf-8").replace("[[gpu]]\n", "[[gpu]]\nbogus = 1\n", 1),
                 encoding="utf-8")
    messages = []
    for _ in range(2):
        with pytest.raises(InputError) as exc:
            load_catalog(p)
        messages.append(str(exc.value))
    assert messages[0] == messages[1]
    assert messages[0].endswith("field 'bogus': unknown key")
    assert not list((tmp_path / "cache").glob("catalog-*.json"))


def test_corrupt_or_foreign_entry_is_a_miss(monkeypatch, tmp_path):
    _cache(monkeypatch, tmp_path)
    good = load_catalog()
    (entry,) = tmp_path.glob("catalog-*.json")
    for junk in ("{not json", json.dumps({"format": 1, "key": "other", "files": [], "data": {}}),
                 json.dumps({"format": 1, "key": entry.stem, "files": [], "data": {"catalog": 1}})):
        entry.write_text(junk, encoding="utf-8")
        validated_cache._memo.clear()
        assert load_catalog() == good


def test_cache_off_writes_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("COSTOPT_CACHE_DIR", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    validated_cache._memo.clear()
    assert validated_cache.cache_dir() is None
    load_catalog()
    assert not any(tmp_path.rglob("*.json"))


def test_headline_prints_the_same_bytes_with_cold_warm_and_no_cache(tmp_path):
    cmd = [sys.executable, "-m", "costopt.cli", "solve", "--budget", "200000", "--model", "inception_v3"]
    outs = []
    for folder in (str(tmp_path), str(tmp_path), "off"):  # cold, warm, none
        env = {**os.environ, "COSTOPT_CACHE_DIR": folder, "COLUMNS": "120"}
        outs.append(subprocess.run(cmd, env=env, capture_output=True, check=True).stdout)
    assert len(list(Path(tmp_path).glob("catalog-*.json"))) == 1
    assert outs[0] == outs[1] == outs[2]
    # issue 12's headline pick was 6 x h200-nvl; since the compute roofline keeps the H200's launch-bound
    # time instead of scaling it (issue 11, docs/compute.md), 16 x rtx-pro-6000 (a roofline estimate)
    assert b"Best: 16 x rtx-pro-6000" in outs[0]


# --- a cache that cannot lie (issue 26): tampered, foreign, writable-by-others, truncated, odd entries ---


def _entry(folder):
    (entry,) = folder.glob("catalog-*.json")
    return entry


def _reload_equals_validated(monkeypatch, folder, good, original: bytes):
    """The next load (as a new process: memo cleared) gives the validated catalog, and the entry is
    rewritten as costopt writes it (a miss is replaced, atomically)."""
    validated_cache._memo.clear()
    assert load_catalog() == good
    assert _entry(folder).read_bytes() == original


def test_tampered_entry_is_a_miss_and_rewritten(monkeypatch, tmp_path):
    _cache(monkeypatch, tmp_path)
    good = load_catalog()
    entry = _entry(tmp_path)
    original = entry.read_bytes()
    price = good.gpus["h100-sxm"].price_usd
    needle = f'"price_usd": {price!r}'.encode()
    assert needle in original
    # a price changed in place, the header's digest left as it was: the digest no longer matches
    entry.write_bytes(original.replace(needle, b'"price_usd": 1.0', 1))
    _reload_equals_validated(monkeypatch, tmp_path, good, original)
    assert good.gpus["h100-sxm"].price_usd == price != 1.0


def test_truncated_and_odd_entries_are_misses(monkeypatch, tmp_path):
    _cache(monkeypatch, tmp_path)
    good = load_catalog()
    entry = _entry(tmp_path)
    original = entry.read_bytes()
    head, _, body = original.partition(b"\n")
    import hashlib

    def signed(b: bytes) -> bytes:  # a header whose digest matches the (odd) body
        return head.split(b"sha256=")[0] + b"sha256=" + hashlib.sha256(b).hexdigest().encode() + b"\n" + b

    deep = b"[" * 20000 + b"]" * 20000
    for junk in (original[: len(original) // 2], head, b"", body, signed(deep), signed(b"{}"), signed(b"[1, 2]"),
                 signed(body.replace(b'"source": "', b'"source": "0', 1)), b"\xff\xfe" + original):
        entry.write_bytes(junk)
        _reload_equals_validated(monkeypatch, tmp_path, good, original)


def test_foreign_owned_or_writable_entry_is_ignored(monkeypatch, tmp_path):
    _cache(monkeypatch, tmp_path)
    good = load_catalog()
    entry = _entry(tmp_path)
    original = entry.read_bytes()
    me = os.geteuid()
    # an entry whose digests all match but whose price was changed by someone else: not the user's own
    head, _, body = original.partition(b"\n")
    import hashlib

    price = good.gpus["h100-sxm"].price_usd
    forged = body.replace(f'"price_usd": {price!r}'.encode(), b'"price_usd": 1.0', 1)
    forged = head.split(b"sha256=")[0] + b"sha256=" + hashlib.sha256(forged).hexdigest().encode() + b"\n" + forged
    for mode, owner in ((0o666, me), (0o620, me), (0o600, me + 1)):
        entry.write_bytes(forged)
        os.chmod(entry, mode)
        if owner != me:  # another user's file: as root, really chown it; else pretend to be someone else
            if me == 0:
                os.chown(entry, owner, -1)
            else:
                monkeypatch.setattr(os, "geteuid", lambda: me + 1)
        validated_cache._memo.clear()
        assert load_catalog().gpus["h100-sxm"].price_usd == price
        monkeypatch.setattr(os, "geteuid", lambda: me)
        entry.unlink()


def test_folder_writable_by_others_is_not_used(monkeypatch, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    _cache(monkeypatch, shared)
    good = load_catalog()
    assert not list(shared.iterdir())  # nothing written into a folder others can write
    fresh = tmp_path / "fresh" / "costopt"
    _cache(monkeypatch, fresh)
    assert load_catalog() == good
    assert (os.stat(fresh).st_mode & 0o777) == 0o700  # created private
    assert (os.stat(_entry(fresh)).st_mode & 0o777) == 0o600


def test_fifo_link_or_folder_entry_is_a_miss_without_hanging(monkeypatch, tmp_path):
    _cache(monkeypatch, tmp_path)
    good = load_catalog()
    entry = _entry(tmp_path)
    original = entry.read_bytes()
    other = tmp_path / "elsewhere.json"
    other.write_bytes(original)
    for make in (lambda: os.mkfifo(entry), lambda: os.symlink(other, entry), lambda: entry.mkdir()):
        entry.unlink()
        make()
        validated_cache._memo.clear()
        assert load_catalog() == good  # a FIFO would block a plain open(): this returns at once
        if entry.is_dir() and not entry.is_symlink():
            entry.rmdir()
        else:
            assert entry.read_bytes() == original  # replaced by a regular entry
        entry.unlink(missing_ok=True)
        entry.write_bytes(original)
