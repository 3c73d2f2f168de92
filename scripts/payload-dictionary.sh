#!/usr/bin/env bash
# Trains the dictionary taskgate compresses stored webhook payloads with
# (codec `lz4-dict1`, src/store/payloads.rs), from GitHub's published
# example payloads under fixtures/webhooks/.
#
#   bash scripts/payload-dictionary.sh [OUT=src/store/payload-dict-1.bin]
#
# A dictionary is part of the storage format: payloads stored with it can
# only be read back with the very same bytes, and a test pins its SHA-256.
# Never overwrite a dictionary that has shipped; write a new file, give it a
# new codec name, and keep decoding the old one.
#
# The examples of the `issues` event are left out of the training set on
# purpose: the intake benchmark posts one of them, and a dictionary that
# had seen it would flatter the benchmark.
#
# Needs python3 and zstd (Debian package `zstd`). zstd only trains the
# dictionary; what taskgate uses at run time is LZ4 (lz4_flex) with the
# dictionary's bytes as its external dictionary, so the zstd headers at the
# front of the file are just more bytes LZ4 may refer back to.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-src/store/payload-dict-1.bin}
SAMPLES=$(mktemp -d)
trap 'rm -rf "$SAMPLES"' EXIT

# GitHub sends minified JSON; train on what will actually be stored.
python3 - "$SAMPLES" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
for path in sorted(pathlib.Path("fixtures/webhooks").glob("*/*.json")):
    if path.parent.name == "issues":
        continue
    minified = json.dumps(json.loads(path.read_text()), separators=(",", ":"))
    (out / f"{path.parent.name}__{path.name}").write_text(minified)
PY
zstd -q --train "$SAMPLES"/* --maxdict=16384 -T1 -o "$OUT" -f
echo "wrote $OUT ($(stat -c %s "$OUT") bytes) from $(ls "$SAMPLES" | wc -l) examples; sha256 $(sha256sum "$OUT" | cut -d' ' -f1)"
