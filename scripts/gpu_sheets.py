"""The GPU sheets (configs/gpus/*.yaml) as the evaluation scripts read them: top-level lines by
regex, keyed by each sheet's CUDA device name (`cuda_name`), without a YAML parser.

  import gpu_sheets    (from a script in scripts/, whose folder Python puts on the path)
"""
import functools
import glob
import os
import re

DEFAULT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "gpus")


@functools.lru_cache(maxsize=None)
def sheet_texts(gpu_dir):
    """The text of every sheet of gpu_dir, read once per folder however many fields a script
    asks of it (a tuple, in the folder's sorted order)."""
    texts = []
    for path in sorted(glob.glob(os.path.join(gpu_dir, "*.yaml"))):
        with open(path) as f:
            texts.append(f.read())
    return tuple(texts)


def sheet_groups(gpu_dir, patterns):
    """CUDA device name -> {key: the first group of patterns[key]} (each a regex over one
    top-level line) for every sheet of gpu_dir that names its device and matches them all."""
    found = {}
    for text in sheet_texts(gpu_dir):
        name = re.search(r'^cuda_name:\s*"?([^"\n]+)"?\s*$', text, re.M)
        fields = {k: re.search(p, text, re.M) for k, p in patterns.items()}
        if name and all(fields.values()):
            found[name.group(1).strip()] = {k: m.group(1).strip() for k, m in fields.items()}
    return found


def sheet_fields(gpu_dir, pattern):
    """CUDA device name -> the first group of one regex, for the sheets that match it."""
    return {n: g["field"] for n, g in sheet_groups(gpu_dir, {"field": pattern}).items()}


def sheet_numbers(gpu_dir, keys):
    """CUDA device name -> {key: float} for the sheets that state every `key: number`."""
    return {n: {k: float(v) for k, v in g.items()}
            for n, g in sheet_groups(gpu_dir, {k: rf"^{k}:\s*([0-9.]+)" for k in keys}).items()}
