"""The graph by folder and file, for a map that shows folders first and opens them one at a time: a
folder's children (sub-folders and files) with their symbol counts and the calls between them, and
one file's symbols with every call in or out of it. No query reads more than the folder or file asked
for, so the map costs the same at 300 symbols or 30,000.
"""

from __future__ import annotations

from collections import Counter

from hivelore.records import record
from hivelore.sqlitedb import chunks

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see records.py)
if TYPE_CHECKING:
    from hivelore.codegraph import Graph

MAX_FOLDER_EDGES = 400  # the heaviest call bundles of a folder's children: more is a hairball, not a map
MAX_FILE_EDGES = 2_000  # calls in and out of one file (a generated file may have more)


@record
class Entry:
    """A child of a folder: a sub-folder ("folder") or a file ("file"), by its repository path."""

    path: str
    kind: str
    files: int
    symbols: int


@record
class Bundle:
    """`calls` calls from the code under `source` to the code under `target`. An end inside the folder
    asked for is one of its children; an end outside it is a file path, which the map draws at the
    nearest folder it shows."""

    source: str
    target: str
    calls: int


@record
class Folder:
    path: str  # "" for the repository's root; a folder holding a single folder is skipped into it
    children: list  # [Entry], folders first, then files, by name
    bundles: list  # [Bundle], heaviest first


@record
class FileSymbol:
    id: str
    qualname: str
    kind: str
    line: int
    end_line: int
    parent: str  # the id of the class (or function) it is defined in, in the same file; "" at top level


@record
class Call:
    caller: str
    callee: str
    confidence: float


@record
class FileMap:
    path: str
    symbols: list  # [FileSymbol] in source order
    calls: list  # [Call] with at least one end in the file, most confident first


def folder(graph: Graph, path: str, bundles: bool = True) -> Folder:
    """The children of the folder at `path` ("" for the root) and (unless `bundles` is False: they
    cost a walk over every call touching the folder) the call bundles between them and the rest of
    the repository; a folder whose only child is a folder is opened through to it."""
    path = path.strip("/")
    counts = _symbols_per_file(graph, path)
    children = _children(path, counts)
    while len(children) == 1 and children[0].kind == "folder":
        path = children[0].path
        children = _children(path, counts)
    subfolders = [c.path for c in children if c.kind == "folder"]
    return Folder(path, children, _bundles(graph, path, subfolders) if bundles else [])


def file(graph: Graph, path: str) -> FileMap:
    """One file's present symbols and the calls in and out of them."""
    rows = graph.store.conn.execute(
        "SELECT key, id, qualname, kind, line, end_line FROM symbols WHERE repo = ? AND file = ? AND present = 1"
        " ORDER BY line, key",
        (graph.root, path),
    ).fetchall()
    by_qualname = {qualname: symbol_id for _key, symbol_id, qualname, *_rest in rows if "#" not in symbol_id}
    symbols = [
        FileSymbol(symbol_id, qualname, kind, line, end_line, by_qualname.get(qualname.rpartition(".")[0], ""))
        for _key, symbol_id, qualname, kind, line, end_line in rows
    ]
    return FileMap(path, symbols, _file_calls(graph, [row[0] for row in rows]))


def _symbols_per_file(graph: Graph, folder_path: str) -> dict[str, int]:
    low, high = _range(folder_path)
    rows = graph.store.conn.execute(
        "SELECT file, count(*) FROM symbols WHERE repo = ? AND present = 1 AND file >= ? AND file < ? GROUP BY file",
        (graph.root, low, high),
    )
    return dict(rows)


def _range(folder_path: str) -> tuple[str, str]:
    """The file paths under a folder as a range of the (repo, file) index: ["a/b/", "a/b0")."""
    if not folder_path:
        return "", "\U0010ffff"
    return f"{folder_path}/", f"{folder_path}0"  # "0" sorts just after "/"


def _children(folder_path: str, counts: dict[str, int]) -> list[Entry]:
    prefix = f"{folder_path}/" if folder_path else ""
    folders: dict[str, list[int]] = {}
    files = []
    for file_path, symbols in counts.items():
        if not file_path.startswith(prefix):
            continue
        head, slash, _rest = file_path[len(prefix) :].partition("/")
        if slash:
            totals = folders.setdefault(prefix + head, [0, 0])
            totals[0] += 1
            totals[1] += symbols
        else:
            files.append(Entry(file_path, "file", 1, symbols))
    files.sort(key=lambda entry: entry.path)
    return [Entry(p, "folder", n, s) for p, (n, s) in sorted(folders.items())] + files


def child_of(folder_path: str, subfolders: list[str], file_path: str) -> str:
    """The child of the folder that holds `file_path`: one of its sub-folders, or the file itself."""
    for sub in subfolders:
        if file_path.startswith(f"{sub}/"):
            return sub
    return file_path


def _bundles(graph: Graph, folder_path: str, subfolders: list[str]) -> list[Bundle]:
    low, high = _range(folder_path)
    rows = graph.store.conn.execute(
        "SELECT a.file, b.file, count(*) FROM calls c JOIN symbols a ON a.key = c.caller"
        " JOIN symbols b ON b.key = c.callee WHERE a.repo = ?"
        " AND ((a.file >= ? AND a.file < ?) OR (b.file >= ? AND b.file < ?)) GROUP BY a.file, b.file",
        (graph.root, low, high, low, high),
    )
    totals: Counter[tuple[str, str]] = Counter()
    for caller_file, callee_file, calls in rows:
        ends = [child_of(folder_path, subfolders, f) if low <= f < high else f for f in (caller_file, callee_file)]
        if ends[0] != ends[1]:
            totals[ends[0], ends[1]] += calls
    heaviest = sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:MAX_FOLDER_EDGES]
    return [Bundle(source, target, calls) for (source, target), calls in heaviest]


def _file_calls(graph: Graph, keys: list[int]) -> list[Call]:
    conn, found = graph.store.conn, {}
    for batch in chunks(keys):
        marks = ",".join("?" * len(batch))
        for query in (
            f"SELECT a.id, b.id, c.confidence FROM calls c JOIN symbols a ON a.key = c.caller"
            f" JOIN symbols b ON b.key = c.callee WHERE c.caller IN ({marks})",
            f"SELECT a.id, b.id, c.confidence FROM calls c JOIN symbols a ON a.key = c.caller"
            f" JOIN symbols b ON b.key = c.callee WHERE c.callee IN ({marks})",
        ):
            for caller, callee, confidence in conn.execute(query, batch):
                found[caller, callee] = confidence
    ranked = sorted(found.items(), key=lambda item: (-item[1], item[0]))[:MAX_FILE_EDGES]
    return [Call(caller, callee, confidence) for (caller, callee), confidence in ranked]
