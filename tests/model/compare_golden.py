#!/usr/bin/env python3
"""compare_golden: checks an Anvil logprobs-v1 dump against a llama.cpp golden file.

  compare_golden.py GOLDEN(.json|.json.gz) ANVIL.json [--max-kl 1e-6] [--margin 0.05]
                    [--n-greedy 16] [--max-dlogprob X] [--min-mass 0.9] [--verbose]

A golden is either a full dump ("logprobs-v1": every position's log-probs over the whole
vocabulary) or a truncated one ("logprobs-topk-v1": per position the top-k ids and log-probs).
Per position (golden distribution P, Anvil distribution Q):
  * KL(P||Q). For a top-k golden over its support S with the rest lumped into one "other"
    bucket: sum_{j in S} p_j log(p_j/q_j) + (1-P(S)) log((1-P(S))/(1-Q(S))), a lower bound of
    the full KL (coarse-graining never increases KL); the covered mass P(S) is reported.
  * top-1: wherever the golden's top-1 leads its second by more than --margin probability,
    Anvil's argmax must be the same token (a mismatch fails; closer calls are only counted).
  * max |dlogprob| over entries with golden log-prob > -30: printed; fails only if above
    --max-dlogprob when that is given.
Then the greedy continuation: the first --n-greedy ids of Anvil's "generated" must equal the
golden's (default: all of the golden's), except that with --greedy-margin M they may part at a
step where the golden's top-1 led by <= M (a near-tie; nothing after it is checked). The token
sequences must be identical.
Prints one summary line per file; exit 1 on failure, 2 on unreadable input.
"""
import argparse
import gzip
import json
import math
import sys


def load(path):
    try:
        op = gzip.open if path.endswith(".gz") else open
        with op(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print("compare_golden: cannot read %s: %s" % (path, e))
        sys.exit(2)


def as_lp(v):
    return -math.inf if v is None else float(v)


def logsumexp(xs):
    m = max(xs)
    if m == -math.inf:
        return -math.inf
    return m + math.log(sum(math.exp(x - m) for x in xs))


def golden_positions(g):
    """Yields (pos, input_token, {id: logprob} support, full list or None)."""
    fmt = g.get("format")
    for p in g.get("positions", []):
        if fmt == "logprobs-topk-v1":
            yield p["pos"], p.get("input_token"), dict(zip(p["top_ids"], map(as_lp, p["top_logprobs"]))), None
        else:
            lp = [as_lp(v) for v in p["logprobs"]]
            yield p["pos"], p.get("input_token"), None, lp


def compare(g, a, args, name="golden"):
    """Returns (ok, summary line, list of per-position detail lines)."""
    fails, details = [], []
    gt, at = g.get("tokens", []), a.get("tokens", [])
    if gt != at:
        n = next((i for i, (x, y) in enumerate(zip(gt, at)) if x != y), min(len(gt), len(at)))
        fails.append("token sequences differ at index %d (golden %d tokens, anvil %d)" % (n, len(gt), len(at)))
    n_vocab = g.get("n_vocab")
    apos = {p["pos"]: p for p in a.get("positions", [])}
    kl_max = kl_sum = dlp_max = 0.0
    mass_min = 1.0
    n_pos = n_checked = n_close = n_top1_bad = 0
    for pos, tok, support, full in golden_positions(g):
        ap = apos.get(pos)
        if ap is None:
            fails.append("anvil dump has no position %d" % pos)
            break
        q = [as_lp(v) for v in ap["logprobs"]]
        if n_vocab is not None and len(q) != n_vocab:
            fails.append("pos %d: anvil has %d log-probs, vocabulary is %d" % (pos, len(q), n_vocab))
            break
        if any(math.isnan(v) for v in q):
            fails.append("pos %d: anvil log-probs contain NaN" % pos)
            break
        # renormalize (both engines' float32 softmax sums are 1 +- ~1e-6, which would otherwise
        # show up as a first-order KL term of that size)
        lse = logsumexp(q)
        if not math.isfinite(lse):
            fails.append("pos %d: anvil log-probs are all null/-inf (or +inf)" % pos)
            break
        q = [v - lse for v in q]
        if full is not None:
            if len(full) != len(q):
                fails.append("pos %d: golden has %d log-probs, anvil %d" % (pos, len(full), len(q)))
                break
            lse = logsumexp(full)
            support = {j: v - lse for j, v in enumerate(full) if v > -math.inf}
        # KL(P||Q) over the support (+ the lumped remainder for truncated goldens)
        kl, mass_p, mass_q = 0.0, 0.0, 0.0
        for j, lp in support.items():
            pj = math.exp(lp)
            mass_p += pj
            mass_q += math.exp(q[j])
            if pj > 0.0:
                kl += math.inf if q[j] == -math.inf else pj * (lp - q[j])
        if full is None:
            rest_p, rest_q = max(0.0, 1.0 - mass_p), max(0.0, 1.0 - mass_q)
            if rest_p > 0.0:
                kl += math.inf if rest_q == 0.0 else rest_p * math.log(rest_p / rest_q)
        kl = max(kl, 0.0)  # rounding of the golden's own normalization can make it -1e-9
        mass_min = min(mass_min, mass_p)
        # top-1 with margin
        ranked = sorted(support.items(), key=lambda kv: -kv[1])
        g1, p1 = ranked[0][0], math.exp(ranked[0][1])
        p2 = math.exp(ranked[1][1]) if len(ranked) > 1 else 0.0
        a1 = max(range(len(q)), key=q.__getitem__)
        if p1 - p2 > args.margin:
            n_checked += 1
            if a1 != g1:
                n_top1_bad += 1
                fails.append("pos %d: argmax %d, golden top-1 %d leads by %.3f" % (pos, a1, g1, p1 - p2))
        else:
            n_close += 1
        dlp = max((abs(lp - q[j]) for j, lp in support.items() if lp > -30.0), default=0.0)
        dlp_max = max(dlp_max, dlp)
        kl_max = max(kl_max, kl)
        kl_sum += kl
        n_pos += 1
        if not kl <= args.max_kl:
            fails.append("pos %d: KL %.3e > %.1e" % (pos, kl, args.max_kl))
        if args.max_dlogprob is not None and not dlp <= args.max_dlogprob:
            fails.append("pos %d: max|dlogprob| %.3e > %.1e" % (pos, dlp, args.max_dlogprob))
        details.append("pos %3d tok %6s: KL %.3e  max|dlp| %.3e  mass %.4f  top1 %d/%d (p1-p2 %.3f)"
                       % (pos, tok, kl, dlp, mass_p, g1, a1, p1 - p2))
    if n_pos == 0 and not fails:
        fails.append("no positions compared")
    if g.get("format") == "logprobs-topk-v1" and mass_min < args.min_mass:
        fails.append("golden covers only %.3f of the probability mass (< --min-mass %.2f)" % (mass_min, args.min_mass))
    # greedy continuation
    gg, ag = g.get("generated") or [], a.get("generated") or []
    n_greedy = len(gg) if args.n_greedy is None else args.n_greedy
    if n_greedy > len(gg):
        fails.append("golden has only %d generated tokens, %d asked" % (len(gg), n_greedy))
        n_greedy = len(gg)
    margins = g.get("greedy_margins") or []
    if args.greedy_margin > 0.0 and len(margins) < n_greedy:
        fails.append("--greedy-margin needs the golden's greedy_margins")
    same = next((i for i in range(len(gg)) if i >= len(ag) or ag[i] != gg[i]), len(gg))
    tie_note = ""
    if same < n_greedy:
        m = margins[same] if same < len(margins) else None
        if same < len(ag) and m is not None and m <= args.greedy_margin:
            # a correct engine may take the other branch of a near-tie; later steps then differ
            tie_note = ", then a near-tie (golden p1-p2 %.4f)" % m
        else:
            fails.append("greedy continuation differs at step %d: anvil %s, golden %d%s"
                         % (same, ag[same] if same < len(ag) else "(none)", gg[same],
                            "" if m is None else " (golden p1-p2 there %.4f)" % m))
    ok = not fails
    line = ("%s: %d pos, KL max %.2e mean %.2e (limit %.0e), top-1 %d/%d agree (margin > %.2f; %d closer), "
            "max|dlogprob| %.2e, greedy %d/%d same%s%s -> %s"
            % (name, n_pos, kl_max, kl_sum / max(1, n_pos), args.max_kl, n_checked - n_top1_bad, n_checked,
               args.margin, n_close, dlp_max, min(same, n_greedy), n_greedy, tie_note,
               (", min covered mass %.4f" % mass_min) if g.get("format") == "logprobs-topk-v1" else "",
               "PASS" if ok else "FAIL"))
    return ok, line, details, fails


def add_threshold_args(p):
    p.add_argument("--max-kl", type=float, default=1e-6, help="max KL(golden||anvil) per position (1e-6)")
    p.add_argument("--margin", type=float, default=0.05,
                   help="top-1 must agree where the golden's p1-p2 exceeds this (0.05)")
    p.add_argument("--n-greedy", type=int, default=None,
                   help="greedy tokens that must be identical (default: all of the golden's)")
    p.add_argument("--greedy-margin", type=float, default=0.0,
                   help="the greedy continuation may diverge only at a step where the golden's p1-p2 is "
                        "<= this (needs greedy_margins in the golden; default 0: no divergence at all)")
    p.add_argument("--max-dlogprob", type=float, default=None,
                   help="also fail if a max|dlogprob| (golden log-prob > -30) exceeds this")
    p.add_argument("--min-mass", type=float, default=0.0,
                   help="top-k goldens: fail if a position's covered mass is below this (0: report only)")
    p.add_argument("--verbose", action="store_true", help="print every position")


def main():
    p = argparse.ArgumentParser(description="compare an Anvil logprobs-v1 dump with a llama.cpp golden")
    p.add_argument("golden")
    p.add_argument("anvil")
    add_threshold_args(p)
    args = p.parse_args()
    g, a = load(args.golden), load(args.anvil)
    name = args.golden.rsplit("/", 1)[-1]
    ok, line, details, fails = compare(g, a, args, name)
    if args.verbose:
        print("\n".join(details))
    for f in fails[:10]:
        print("  FAIL: " + f)
    if len(fails) > 10:
        print("  ... %d more failures" % (len(fails) - 10))
    print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
