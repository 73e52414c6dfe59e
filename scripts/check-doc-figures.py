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
                                            [--checks docs/quoted-forecasts.yaml]
Exit 0: every quote found. 1: one line per stale quote (the file, what the build prints now,
what the doc has there). 2: the list, a document or a command failed.
"""
import argparse
import json
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


def check_one(c, runner, root, docs):
    doc = c["doc"]
    if doc not in docs:
        try:
            with open(os.path.join(root, doc), encoding="utf-8") as f:
                docs[doc] = normalise(f.read())
        except OSError as e:
            raise CheckError(f"{doc}: cannot read it: {e}")
    text = docs[doc]
    if "lines" in c:
        out = runner.run(c["run"], False).splitlines()
        if len(out) < c["lines"]:
            raise CheckError(f"`tilecast {c['run']}` printed {len(out)} lines, "
                             f"the check quotes {c['lines']}")
        missing = []
        for line in out[:c["lines"]]:
            line = normalise(line)
            if line and line not in text:
                missing.append(line)
        return [(m, context_in_doc(text, m)) for m in missing], f"tilecast {c['run']}"
    values = {name: runner.json(cmd) for name, cmd in c["runs"].items()}
    try:
        expected = normalise(c["quote"].format(**values))
    except (KeyError, IndexError, ValueError, TypeError) as e:
        raise CheckError(f"{doc}: quote {c['quote'][:60]!r}...: no such field or format ({e!r})")
    commands = "; ".join(f"{k}: tilecast {v}" for k, v in c["runs"].items())
    if expected in text:
        return [], commands
    return [(expected, context_in_doc(text, expected))], commands


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.dirname(here), help="the repository (the docs' root)")
    ap.add_argument("--tilecast", default=None, help="the binary (default ROOT/build/tilecast)")
    ap.add_argument("--checks", default=None, help="default ROOT/docs/quoted-forecasts.yaml")
    a = ap.parse_args()
    tilecast = a.tilecast or os.path.join(a.root, "build", "tilecast")
    checks_path = a.checks or os.path.join(a.root, "docs", "quoted-forecasts.yaml")
    if not os.access(tilecast, os.X_OK):
        print(f"check-doc-figures: {tilecast}: no tilecast binary there (--tilecast)", file=sys.stderr)
        return 2
    try:
        checks = load_checks(checks_path)
        runner = Runner(os.path.abspath(tilecast), a.root)
        docs, stale, quotes = {}, 0, 0
        for c in checks:
            missing, commands = check_one(c, runner, a.root, docs)
            quotes += 1
            for expected, there in missing:
                stale += 1
                print(f"{c['doc']}: stale: the build prints \"{expected}\" ({commands}); "
                      f"the doc has \"{there}\"" if there else
                      f"{c['doc']}: stale: the build prints \"{expected}\" ({commands}); "
                      f"nothing like it in the doc")
    except CheckError as e:
        print(f"check-doc-figures: {e}", file=sys.stderr)
        return 2
    except subprocess.TimeoutExpired as e:
        print(f"check-doc-figures: `{' '.join(e.cmd)}` ran past {e.timeout} s", file=sys.stderr)
        return 2
    print(f"check-doc-figures: {quotes} quotes in {len(docs)} documents, {stale} stale")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
