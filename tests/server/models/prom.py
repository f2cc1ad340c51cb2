"""prom: a strict parser of the Prometheus text exposition format (0.0.4), for checking
`GET /metrics`. parse(text) returns {"types": {family: type}, "help": {family: text},
"samples": [(name, {label: value}, float)]} or raises ValueError naming the bad line:
a sample must be `name{labels} value`, belong to a family whose # HELP and # TYPE came
first, and appear once; histogram buckets must be cumulative and end with +Inf = _count."""
import math
import re

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SAMPLE = re.compile(r"^(" + NAME + r")(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?$")
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)')
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def parse_labels(text, lineno):
    labels = {}
    pos = 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        if not m:
            raise ValueError(f"line {lineno}: bad labels {{{text}}}")
        key = m.group(1)
        if key in labels:
            raise ValueError(f"line {lineno}: label {key} repeated")
        labels[key] = m.group(2).replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        pos = m.end()
    return labels


def parse_value(text, lineno):
    if text in ("+Inf", "-Inf", "NaN"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"line {lineno}: '{text}' is not a number") from None


def family_of(name, types):
    if name in types:
        return name
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and types.get(name[: -len(suffix)]) in ("histogram", "summary"):
            return name[: -len(suffix)]
    return None


def parse(text):
    types, helps, samples, seen = {}, {}, [], set()
    if not text.endswith("\n"):
        raise ValueError("the exposition does not end with a newline")
    for lineno, line in enumerate(text.split("\n")[:-1], 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] == "HELP":
                if parts[2] in helps:
                    raise ValueError(f"line {lineno}: second HELP for {parts[2]}")
                helps[parts[2]] = parts[3] if len(parts) > 3 else ""
            elif len(parts) >= 3 and parts[1] == "TYPE":
                if len(parts) != 4 or parts[3] not in TYPES:
                    raise ValueError(f"line {lineno}: bad TYPE line")
                if parts[2] in types:
                    raise ValueError(f"line {lineno}: second TYPE for {parts[2]}")
                types[parts[2]] = parts[3]
            continue
        m = SAMPLE.match(line)
        if not m:
            raise ValueError(f"line {lineno}: not `name{{labels}} value`: {line!r}")
        name, labels = m.group(1), parse_labels(m.group(2) or "", lineno)
        value = parse_value(m.group(3), lineno)
        fam = family_of(name, types)
        if fam is None or fam not in helps:
            raise ValueError(f"line {lineno}: {name} has no # HELP and # TYPE before it")
        key = (name, tuple(sorted(labels.items())))
        if key in seen:
            raise ValueError(f"line {lineno}: series {name}{labels} repeated")
        seen.add(key)
        if types[fam] == "counter" and (value < 0 or math.isnan(value)):
            raise ValueError(f"line {lineno}: counter {name} is {value}")
        samples.append((name, labels, value))
    check_histograms(types, samples)
    return {"types": types, "help": helps, "samples": samples}


def check_histograms(types, samples):
    for fam, t in types.items():
        if t != "histogram":
            continue
        series = {}
        for name, labels, value in samples:
            if name == fam + "_bucket":
                rest = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
                if "le" not in labels:
                    raise ValueError(f"{name}{labels} has no le label")
                series.setdefault(rest, {})["b" + labels["le"]] = value
            elif name in (fam + "_count", fam + "_sum"):
                series.setdefault(tuple(sorted(labels.items())), {})[name[len(fam):]] = value
        for rest, vals in series.items():
            buckets = sorted(((parse_value(k[1:], 0), v) for k, v in vals.items() if k.startswith("b")))
            if not buckets or buckets[-1][0] != math.inf:
                raise ValueError(f"{fam}{dict(rest)}: no +Inf bucket")
            if any(b[1] > c[1] for b, c in zip(buckets, buckets[1:])):
                raise ValueError(f"{fam}{dict(rest)}: buckets are not cumulative")
            if "_count" not in vals or "_sum" not in vals or vals["_count"] != buckets[-1][1]:
                raise ValueError(f"{fam}{dict(rest)}: _count/_sum missing or _count != +Inf bucket")


def value(parsed, name, **labels):
    """The value of the one sample with that name and (a subset of) labels; None if none."""
    found = [v for n, l, v in parsed["samples"] if n == name and all(l.get(k) == str(x) for k, x in labels.items())]
    return sum(found) if found else None
