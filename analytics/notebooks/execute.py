"""Runs a notebook top to bottom with nbclient, as Jupyter's "Run All" would, with parameters.

    python analytics/notebooks/execute.py NOTEBOOK.ipynb OUT.ipynb [name=value ...]

Each name=value (value as a Python literal, else a string) is set in a cell inserted after the
cell tagged `parameters`, as papermill does, so the notebook's own defaults stay untouched.
Exits non-zero, naming the notebook and the failing cell, when a cell raises.
"""

import ast
import sys

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def literal(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    source, target, *assignments = argv
    nb = nbformat.read(source, as_version=4)
    params = {}
    for item in assignments:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            print(f"execute.py: parameter {item!r} is not name=value", file=sys.stderr)
            return 2
        params[name] = literal(value)
    tagged = [i for i, cell in enumerate(nb.cells) if "parameters" in cell.get("metadata", {}).get("tags", [])]
    if params and not tagged:
        print(f"execute.py: {source} has no cell tagged 'parameters' to override", file=sys.stderr)
        return 2
    if params:
        lines = "\n".join(f"{name} = {value!r}" for name, value in params.items())
        cell = nbformat.v4.new_code_cell(f"# Parameters\n{lines}", metadata={"tags": ["injected-parameters"]})
        nb.cells.insert(tagged[0] + 1, cell)
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": "."}})
    try:
        client.execute()
    except CellExecutionError as error:
        nbformat.write(nb, target)
        print(f"execute.py: {source}: a cell failed:\n{error}", file=sys.stderr)
        return 1
    nbformat.write(nb, target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
