#!/usr/bin/env python3
"""validate: checks the documents test_grammar generated under grammar constraints.

Each line of the input (JSON lines, written by tests/generate/test_grammar.c) holds a vocabulary
name, a JSON schema and a document as hex bytes. Every document must decode as strict
UTF-8, parse with Python's json module (no NaN/Infinity, no trailing data) and validate
against its schema with the jsonschema package (the draft the schema declares, else the
latest). Fails if any document fails or if fewer than --min documents were written.

usage: validate.py DOCS.jsonl [--min N]
"""
import argparse
import json
import sys

import jsonschema


def reject_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("docs")
    ap.add_argument("--min", type=int, default=1, help="fewest documents expected")
    args = ap.parse_args()
    passed = failed = 0
    per_vocab = {}
    with open(args.docs, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            rec = json.loads(line)
            raw = bytes.fromhex(rec["doc_hex"])
            try:
                text = raw.decode("utf-8")
                doc = json.loads(text, parse_constant=reject_constant)
                cls = jsonschema.validators.validator_for(rec["schema"])
                cls.check_schema(rec["schema"])
                cls(rec["schema"]).validate(doc)
                passed += 1
                per_vocab[rec["vocab"]] = per_vocab.get(rec["vocab"], 0) + 1
            except Exception as e:  # noqa: BLE001 - report every kind of failure
                failed += 1
                if failed <= 10:
                    print(f"line {n} ({rec['vocab']}): {type(e).__name__}: {str(e)[:300]}\n  document: {raw[:300]!r}")
    for v, k in sorted(per_vocab.items()):
        print(f"{v}: {k} documents valid")
    if passed + failed < args.min:
        print(f"only {passed + failed} documents, expected at least {args.min}")
        failed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
