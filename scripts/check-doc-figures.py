#!/usr/bin/env python3
"""Checks that the forecasts the docs quote are what today's build prints.

The docs quote forecasts (README's serving example, docs/model-graphs.md's tables...). A change
to a kernel model, a graph or the bundled weights moves them, and a quote nobody re-ran is a
figure nobody measured. docs/quoted-forecasts.yaml lists each quote with the commands that make
it; this script runs them and looks for the quote, whitespace-normalised, in its document.

Two kinds of entry:
  run + lines: N     the first N lines of the command's table output appear in the doc as printed
  runs + quote: T    T, a Python format string over the commands' JSON (`{a[tpot_ms]:.1f}`,
                     `{b[disaggregation][prefill_ms]:,.1f}`), appears in the doc

Usage: python3 scripts/check-doc-figures.py [--tilecast build/tilecast] [--root .]
                                            [--checks docs/quoted-forecasts.yaml] [--update]
A quote is found where the doc has its words and every number as printed, or a number with
decimals one unit of its last place off (185.791 for 185.792): the same weights print such
last-digit jitter on two CPUs, whose OpenBLAS kernels sum in another order (the README's
capacity table, L40S at tp 1: OPENBLAS_CORETYPE=Haswell prints a TTFT of 185.792 ms, SkylakeX
185.791). Integers must match.

Exit 0: every quote found. 1: one line per stale quote (the file, what the build prints now,
what the doc has there). 2: the list, a document or a command failed.

--update rewrites each stale quote in its document, number by number: where the quote's words
(every standalone number a wildcard; a table quote's lines as one block) match one place in the
doc (of several, the one keeping most of the build's numbers, a table row's key), that place's
numbers become the build's and its words and line breaks stay as they are. A quote whose words
changed, or that matches no place or several alike, is named and left; the
documents are written atomically. Exit 0 when every stale quote was rewritten, else 1. Read the
diff before committing: the prose around a figure may need new words.
"""
import argparse
import json
import math
import os
import re
import shlex
import subprocess
import sys

try:
    import yaml
except ImportError:  # python3-yaml (scripts/install-deps.sh) lives in Debian's own interpreter
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and os.access("/usr/bin/python3", os.X_OK):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("check-doc-figures: python3-yaml is missing (scripts/install-deps.sh installs it)",
          file=sys.stderr)
    sys.exit(2)


class CheckError(Exception):
    pass


def normalise(text):
    return " ".join(text.split())


def load_checks(path):
    try:
        with open(path, encoding="utf-8") as f:
            checks = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        raise CheckError(f"{path}: cannot read the list: {e}")
    if not isinstance(checks, list) or not checks:
        raise CheckError(f"{path}: expected a list of checks")
    for i, c in enumerate(checks, 1):
        where = f"{path}: check {i}"
        if not isinstance(c, dict) or not isinstance(c.get("doc"), str):
            raise CheckError(f"{where}: needs a 'doc' (the quoting file)")
        if "lines" in c:
            if not isinstance(c.get("run"), str) or not isinstance(c["lines"], int) or c["lines"] < 1:
                raise CheckError(f"{where}: 'lines' needs a positive count and one 'run' command")
        elif "quote" in c:
            runs = c.get("runs")
            if (not isinstance(c["quote"], str) or not isinstance(runs, dict) or not runs
                    or not all(isinstance(v, str) for v in runs.values())):
                raise CheckError(f"{where}: 'quote' needs a 'runs' map of names to commands")
        else:
            raise CheckError(f"{where}: needs 'lines' (with 'run') or 'quote' (with 'runs')")
    return checks


class Runner:
    """Runs tilecast commands once each (several quotes share a command)."""

    def __init__(self, tilecast, root):
        self.tilecast = tilecast
        self.root = root
        self.cache = {}

    def run(self, command, as_json):
        args = shlex.split(command)
        if args and args[0] == "tilecast":
            args = args[1:]
        if as_json:
            args += ["--format", "json"]
        key = tuple(args)
        if key not in self.cache:
            proc = subprocess.run([self.tilecast] + args, cwd=self.root, capture_output=True,
                                  text=True, timeout=600)
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
                raise CheckError(f"`tilecast {' '.join(args)}` exited {proc.returncode}: {last}")
            self.cache[key] = proc.stdout
        return self.cache[key]

    def json(self, command):
        out = self.run(command, True)
        try:
            return json.loads(out)
        except ValueError as e:
            raise CheckError(f"`tilecast {command} --format json`: not JSON ({e})")


def context_in_doc(doc_text, expected):
    """The doc's text where the quote should be: found by the quote's longest run of words
    without digits, then as long as the quote. '' when even that is not in the doc."""
    pieces = [p.strip() for p in re.split(r"[-+]?[\d,]*\d(?:\.\d+)?", expected)]
    pieces = sorted((p for p in pieces if len(p) >= 8), key=len, reverse=True)
    for p in pieces:
        at = doc_text.find(p)
        if at >= 0:
            start = max(0, at - expected.find(p))
            return doc_text[start:start + len(expected) + 20]
    return ""


# A figure the build prints: a number not glued to a word ("H200", "llama-3.1", "2.8x" are
# words), with its sign, thousands commas and decimals.
NUMBER = r"[-+]?\d[\d,]*(?:\.\d+)?"
STANDALONE = re.compile(r"(?<![\w.-])" + NUMBER + r"(?![\w])")


def place_pattern(expected_lines):
    """A regex over a raw document for the quote's lines: its words literally (any whitespace
    between them, line breaks included), each standalone number a group; and the build's numbers
    in order."""
    parts, numbers = [], []
    for i, text in enumerate(expected_lines):
        if i:
            parts.append(r"\s+")
        last = 0
        for m in STANDALONE.finditer(text):
            parts.append(words_pattern(text[last:m.start()]))
            parts.append("(" + NUMBER + ")")
            numbers.append(m.group(0))
            last = m.end()
        parts.append(words_pattern(text[last:]))
    return "".join(parts), numbers


def last_digit_apart(doc_number, build_number):
    """True when two printed numbers are the same, or have the same decimals and differ by one
    unit of the last place (a float summed in another order, rounded the other way)."""
    if doc_number == build_number:
        return True
    places = len(build_number.split(".")[1]) if "." in build_number else 0
    doc_places = len(doc_number.split(".")[1]) if "." in doc_number else 0
    if places == 0 or doc_places != places:
        return False
    a, b = (float(x.replace(",", "")) for x in (doc_number, build_number))
    return abs(a - b) <= 1.5 * 10 ** -places


def found(text, expected):
    """True when `expected` (normalised) is in `text` (normalised), literally or with its
    numbers within the last digit (last_digit_apart)."""
    if expected in text:
        return True
    pattern, numbers = place_pattern([expected])
    return any(all(last_digit_apart(m.group(g), n) for g, n in enumerate(numbers, 1))
               for m in re.finditer(pattern, text))


def words_pattern(text):
    return "".join(r"\s+" if t.isspace() else re.escape(t) for t in re.split(r"(\s+)", text) if t)


def rewrite(raw, m, numbers):
    """raw with the match's number groups replaced by the build's numbers."""
    out, last = [], 0
    for g, new in enumerate(numbers, 1):
        out.append(raw[last:m.start(g)])
        out.append(new)
        last = m.end(g)
    out.append(raw[last:])
    return "".join(out)


def distance(doc_numbers, build_numbers):
    """How far a place's numbers are from the build's: the sum over positions of |log| of their
    ratio (a table row's key and unchanged columns add nothing, a figure that moved a little adds
    little). Counting equal numbers instead let a row of another table that shares a column's
    value by chance outrank the row that moved (session 73)."""
    def value(text):
        return abs(float(text.replace(",", ""))) + 1e-9
    return sum(abs(math.log(value(a) / value(b))) for a, b in zip(doc_numbers, build_numbers))


def update_in_place(raw, expected_lines, keeps):
    """raw with the quote's place rewritten to the build's numbers, and the number of places its
    words match. A rewrite that would break a quote the document already has right (`keeps(text)`
    false: two tables showing the same runs) is no candidate; of the others the place whose
    numbers are nearest the build's (`distance`) is taken, when it is clearly nearest (at most
    half the next one's distance); else no answer. None when no place qualifies."""
    pattern, numbers = place_pattern(expected_lines)
    found = list(re.finditer(pattern, raw))
    ranked = []
    for m in found:
        new = rewrite(raw, m, numbers)
        if keeps(new):
            ranked.append((distance([m.group(g) for g in range(1, len(numbers) + 1)], numbers), new))
    ranked.sort(key=lambda t: t[0])
    if len(ranked) == 1 or (len(ranked) > 1 and ranked[0][0] <= 0.5 * ranked[1][0]):
        return ranked[0][1], len(found)
    return None, len(found)


def write_atomically(path, text):
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def check_one(c, runner, root, docs, raws):
    """Checks one quote against the build; reads its document once into `raws` (as written) and
    `docs` (normalised)."""
    doc = c["doc"]
    if doc not in docs:
        try:
            with open(os.path.join(root, doc), encoding="utf-8") as f:
                raws[doc] = f.read()
        except OSError as e:
            raise CheckError(f"{doc}: cannot read it: {e}")
        docs[doc] = normalise(raws[doc])
    text = docs[doc]
    if "lines" in c:
        out = runner.run(c["run"], False).splitlines()
        if len(out) < c["lines"]:
            raise CheckError(f"`tilecast {c['run']}` printed {len(out)} lines, "
                             f"the check quotes {c['lines']}")
        missing, block = [], []
        for line in out[:c["lines"]]:
            line = normalise(line)
            if line:
                block.append(line)
            if line and not found(text, line):
                missing.append(line)
        return [(m, context_in_doc(text, m)) for m in missing], f"tilecast {c['run']}", block
    values = {name: runner.json(cmd) for name, cmd in c["runs"].items()}
    try:
        expected = normalise(c["quote"].format(**values))
    except (KeyError, IndexError, ValueError, TypeError) as e:
        raise CheckError(f"{doc}: quote {c['quote'][:60]!r}...: no such field or format ({e!r})")
    commands = "; ".join(f"{k}: tilecast {v}" for k, v in c["runs"].items())
    if found(text, expected):
        return [], commands, [expected]
    return [(expected, context_in_doc(text, expected))], commands, [expected]


def update_docs(results, root, read):
    """--update: rewrites the stale quotes of `results` ((doc, missing, commands, block) per
    check) in their documents (`read`: each document's text as check_one read it), each rewrite
    keeping every quote the document has right; writes the documents atomically. Returns (stale
    lines rewritten, quotes left)."""
    raws, right, rewritten, left = dict(read), set(), 0, 0
    for i, (doc, missing, _, _) in enumerate(results):
        if not missing:
            right.add(i)
    for i, (doc, missing, commands, block) in enumerate(results):
        if not missing:
            continue
        others = [results[j][3] for j in right if results[j][0] == doc]

        def keeps(text):  # as check_one found them: last-digit jitter included
            text = normalise(text)
            return all(found(text, line) for b in others for line in b)

        new, places = update_in_place(raws[doc], block, keeps)
        quoted = " / ".join(block)[:160]
        if new is None:
            left += 1
            print(f"{doc}: not updated ({places} places match its words; edit it by hand): "
                  f"\"{quoted}\" ({commands})")
            continue
        raws[doc] = new
        right.add(i)
        rewritten += len(missing)
        print(f"{doc}: updated: \"{quoted}\" ({commands})")
    for doc, text in raws.items():
        if text != read[doc]:  # a document whose quotes were all left stays untouched
            write_atomically(os.path.join(root, doc), text)
    return rewritten, left


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.dirname(here), help="the repository (the docs' root)")
    ap.add_argument("--tilecast", default=None, help="the binary (default ROOT/build/tilecast)")
    ap.add_argument("--checks", default=None, help="default ROOT/docs/quoted-forecasts.yaml")
    ap.add_argument("--update", action="store_true",
                    help="rewrite the stale quotes' numbers in their documents (see above)")
    a = ap.parse_args()
    tilecast = a.tilecast or os.path.join(a.root, "build", "tilecast")
    checks_path = a.checks or os.path.join(a.root, "docs", "quoted-forecasts.yaml")
    if not os.access(tilecast, os.X_OK):
        print(f"check-doc-figures: {tilecast}: no tilecast binary there (--tilecast)", file=sys.stderr)
        return 2
    try:
        checks = load_checks(checks_path)
        runner = Runner(os.path.abspath(tilecast), a.root)
        docs, raws, stale, quotes = {}, {}, 0, 0
        results = []
        for c in checks:
            missing, commands, block = check_one(c, runner, a.root, docs, raws)
            quotes += 1
            results.append((c["doc"], missing, commands, block))
            if a.update:
                continue
            for expected, there in missing:
                stale += 1
                print(f"{c['doc']}: stale: the build prints \"{expected}\" ({commands}); "
                      f"the doc has \"{there}\"" if there else
                      f"{c['doc']}: stale: the build prints \"{expected}\" ({commands}); "
                      f"nothing like it in the doc")
        if a.update:
            stale, left = update_docs(results, a.root, raws)
    except CheckError as e:
        print(f"check-doc-figures: {e}", file=sys.stderr)
        return 2
    except subprocess.TimeoutExpired as e:
        print(f"check-doc-figures: `{' '.join(e.cmd)}` ran past {e.timeout} s", file=sys.stderr)
        return 2
    if a.update:
        print(f"check-doc-figures: {quotes} quotes in {len(docs)} documents, {stale} stale lines "
              f"rewritten, {left} quotes left to edit by hand")
        return 1 if left else 0
    print(f"check-doc-figures: {quotes} quotes in {len(docs)} documents, {stale} stale")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
