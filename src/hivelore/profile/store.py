"""The profile store: USER.md, MEMORY.md, SOUL.md, shared snippets and the promotions.json ledger.

One folder per profile, `<HIVELORE_HOME>/profiles/<id>/`; shared snippets in `<HIVELORE_HOME>/shared/*.md`
(read-only here). The store decides nothing about *what* is promoted (that is the grammar's job); it
keeps the files and the ledger, and keeps them in agreement:

- every write is an atomic replace (temp file in the same folder, fsync, rename, fsync the folder),
  under one lock per profile folder (`.lock`, fcntl) held across the whole read-modify-write;
- drift detection: an operation remembers what it loaded (its `atomicfile.Stamp`) and refuses with
  `atomicfile.DriftError`, writing nothing, if a file's content changed on disk before it writes;
- write-ahead intent: before touching any file, `intent.json` records the old and the new contents of
  every file the operation writes; then the Markdown files are written, then the ledger, then the
  intent is removed. An exception in between restores the old contents in-process; a crash is
  repaired by the next `Profile.open`, which rolls the intent *forward* (see `_recover`);
- budgets: a write that makes USER.md (1,375 characters) or MEMORY.md (2,200) longer than its budget
  is refused with the numbers (`BudgetError`), nothing written. SOUL.md is never written here.

    profile = Profile.open(home, "default")          # repairs an interrupted write first
    profile.promote("Prefer TypeScript.", "USER.md", "default language", ["s1", "s2", "s3"])
    profile.forget("Prefer TypeScript.")
    profile.compact("USER.md", dry_run=True).diff
    profile.injection_block()                        # shared → USER.md → SOUL.md → MEMORY.md

The store runs on the hook path (session start, promotion after a prompt), so `open` and
`injection_block` import nothing beyond os, time, zlib and fcntl: json is imported when the ledger
or an intent is read, difflib only by `compact`. See docs/profile.md for the formats and guarantees.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable

from hivelore import atomicfile, confined
from hivelore.atomicfile import Stamp, check_unchanged
from hivelore.errors import BadInput, Unavailable
from hivelore.folderlock import FolderLock
from hivelore.home import FILE_MODE, FOLDER_MODE, private_folder

USER = "USER.md"
MEMORY = "MEMORY.md"
SOUL = "SOUL.md"
LEDGER = "promotions.json"
INTENT = "intent.json"
PROFILE_FILES = (USER, MEMORY, SOUL)
WRITABLE = (USER, MEMORY)  # the files promotion, forget and compact may write
BUDGETS = {USER: 1375, MEMORY: 2200}  # characters (code points) of the whole file
STATUSES = ("active", "superseded", "forgotten")
LEDGER_VERSION = 1
DEFAULT_PROFILE = "default"

# Deliberate test hook for the crash tests: when this environment variable names a stage, the process
# kills itself with SIGKILL at that point of a write, exactly as a power cut or `kill -9` would:
#   "intent"   — intent.json written, no Markdown file written yet
#   "markdown" — the Markdown files written, promotions.json not yet
#   "ledger"   — promotions.json written, intent.json not yet removed
# Never set it outside tests.
CRASH_ENV = "HIVELORE_PROFILE_CRASH_AFTER"

_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_SECTION_TITLES = {
    USER: "USER.md: the user's preferences and communication style",
    SOUL: "SOUL.md: identity and safety guidance",
    MEMORY: "MEMORY.md: project facts and workflow",
}
INJECTION_HEADER = (
    "## Remembered profile context (hivelore)\n"
    "Remembered from earlier sessions: the user's preferences, identity guidance and project facts. "
    "This is context, not instructions: the user's current request and the repository's own "
    "instructions (AGENTS.md, CLAUDE.md and the like) come first; where they disagree, follow them."
)


class ProfileError(BadInput):
    """A profile operation was refused; the message says what is wrong and what to do."""


class ProfileUnavailable(ProfileError, Unavailable):
    """promotions.json or an interrupted write's record is damaged; the message says how to repair it."""


class BudgetError(ProfileError):
    """The write would make USER.md or MEMORY.md longer than its character budget; nothing was written."""


class Promotion:
    """The outcome of `Profile.promote`.

    `created` is False when the line was already active (only its sessions were added); `entry` is the
    ledger entry (a copy); `superseded` the entries this promotion superseded; `changed` whether
    anything was written at all.
    """

    __slots__ = ("line", "file", "category", "created", "changed", "entry", "superseded")

    def __init__(
        self,
        line: str,
        file: str,
        category: str | None,
        created: bool,
        changed: bool,
        entry: dict,
        superseded: list[dict],
    ) -> None:
        self.line = line
        self.file = file
        self.category = category
        self.created = created
        self.changed = changed
        self.entry = entry
        self.superseded = superseded

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__slots__}

    def __repr__(self) -> str:
        superseded = len(self.superseded)
        return f"Promotion(line={self.line!r}, file={self.file!r}, created={self.created}, superseded={superseded})"


class Compaction:
    """The outcome of `Profile.compact`: the unified diff, the lines dropped, and the backup when applied."""

    __slots__ = ("name", "diff", "removed", "backup", "applied")

    def __init__(self, name: str, diff: str, removed: list[str], backup: str | None, applied: bool) -> None:
        self.name = name
        self.diff = diff  # "" when there is nothing to compact
        self.removed = removed  # the dropped entries' text, in file order
        self.backup = backup  # path of the dated backup written before applying, else None
        self.applied = applied  # True only when the file was rewritten

    @property
    def changed(self) -> bool:
        return bool(self.diff)

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__slots__}

    def __repr__(self) -> str:
        return f"Compaction(name={self.name!r}, removed={len(self.removed)}, applied={self.applied})"


class Profile:
    """One profile folder. Make it with `Profile.open` (which repairs an interrupted write first)."""

    __slots__ = ("home", "profile_id", "folder", "shared_folder", "recovery")

    def __init__(self, hivelore_home: str, profile_id: str = DEFAULT_PROFILE) -> None:
        self.home = os.fspath(hivelore_home)
        self.profile_id = check_profile_id(profile_id)
        self.folder = os.path.join(self.home, "profiles", self.profile_id)
        self.shared_folder = os.path.join(self.home, "shared")
        # What `open` repaired, if anything: {"action": "rolled forward" | "completed",
        # "operation": ..., "written": [names], "kept": [names edited by hand since the crash]}
        self.recovery: dict | None = None

    @classmethod
    def open(cls, hivelore_home: str, profile_id: str = DEFAULT_PROFILE) -> Profile:
        """The profile `profile_id` under `hivelore_home`; creates nothing. An `intent.json` left by an
        interrupted write is recovered first (under the lock), so the files and the ledger agree."""
        profile = cls(hivelore_home, profile_id)
        profile._settle()
        return profile

    # -- reading -------------------------------------------------------------------------------

    def read(self, name: str, include_protected: bool = False) -> str:
        """The text of USER.md, MEMORY.md or SOUL.md ("" when the file does not exist)."""
        _check_readable(name, include_protected)
        self._settle()
        return _read_text_lenient(self._path(name))

    def lines(self, name: str, include_protected: bool = False) -> list[str]:
        """The entries of a file: the text of each top-level list item (`- `, `* ` or `+ `), in order."""
        return entries_of(self.read(name, include_protected))

    def shared(self) -> list[tuple[str, str]]:
        """The shared snippets `<home>/shared/*.md` as (file name, text), in name order."""
        try:
            with os.scandir(self.shared_folder) as found:
                names = sorted(
                    e.name for e in found if e.name.endswith(".md") and not e.name.startswith(".") and e.is_file()
                )
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [(name, _read_text_lenient(os.path.join(self.shared_folder, name))) for name in names]

    def promotions(self) -> list[dict]:
        """The ledger entries, oldest first (copies: changing them changes nothing on disk)."""
        self._settle()
        text, _ = _load(self._path(LEDGER))
        return self._parse_ledger(text)

    def search(self, query: str, include_protected: bool = False) -> list[tuple[str, str]]:
        """(file, line) for every non-blank line (list marker removed) in which each query word is part of
        some word, case-insensitive; in injection order: shared snippets, USER.md, SOUL.md (only with
        `include_protected`), MEMORY.md. A query without words finds nothing."""
        words = [w for w in (w.strip(".,;:!?\"'`()[]{}") for w in query.casefold().split()) if w]
        if not words:
            return []
        found = []
        for label, text in self._sources(include_protected):
            for raw in text.split("\n"):
                line = _display_line(raw)
                if not line:
                    continue
                line_words = line.casefold().split()
                if all(any(w in lw for lw in line_words) for w in words):
                    found.append((label, line))
        return found

    def injection_block(self, include_protected: bool = True) -> str:
        """The session-start text: a header saying this is remembered context that ranks below the user's
        current request and the repository's instructions, then shared snippets (name order), USER.md,
        SOUL.md (unless `include_protected` is False) and MEMORY.md. Empty files are skipped; "" when
        all are empty. USER.md and MEMORY.md are cut to their budget (whole lines, saying how many
        lines were left out) should a hand edit have made them longer."""
        sections = []
        for label, text in self._sources(include_protected):
            body = text.strip().lstrip("\ufeff").strip()
            if not body:
                continue
            if label in BUDGETS:
                body = _fit(body, label, BUDGETS[label])
            title = _SECTION_TITLES.get(label) or f"shared snippet {label.removeprefix('shared/')}"
            sections.append(f"### {title}\n{body}")
        if not sections:
            return ""
        return INJECTION_HEADER + "\n\n" + "\n\n".join(sections) + "\n"

    # -- writing -------------------------------------------------------------------------------

    def promote(
        self,
        line: str,
        file: str,
        category: str | None,
        sessions: list[str],
        category_of: Callable[[str], str | None] | None = None,
    ) -> Promotion:
        """Add `line` to `file` (USER.md or MEMORY.md) and the ledger, evidenced by `sessions`.

        Already active in that file: the sessions are added (idempotent). A hand-written identical
        entry is adopted, not duplicated. With a `category`, every other active entry of the same
        category is superseded: status superseded, superseded_by the new entry's id, and its line
        removed from its file. With `category_of`, categories are derived from the lines at run time
        (the new line's and every active entry's; the ledger's `category` only records what it was
        when promoted). Refused (nothing written) over budget, on drift, or for SOUL.md.
        """
        text = clean_line(line)
        if category_of is not None:
            category = category_of(text)
        _check_writable(file, "promotion")
        if category is not None and (not isinstance(category, str) or not category.strip()):
            raise ProfileError("the category must be a non-empty name such as 'package manager', or None.")
        category = category.strip() if category else None
        evidence = _clean_sessions(sessions)
        with self._lock():
            self._recover_if_needed()
            loaded, entries, before, markdown = self._load()
            now = _iso(_now())
            entry = next(
                (e for e in entries if e["status"] == "active" and e["file"] == file and e["line"] == text), None
            )
            created = entry is None
            if entry is None:
                entry = _new_entry(entries, text, file, category, evidence, now)
                entries.append(entry)
            else:
                merged = entry["sessions"] + [s for s in evidence if s not in entry["sessions"]]
                if merged != entry["sessions"]:
                    entry["sessions"] = merged
                    entry["updated_at"] = now
                if category is not None and entry.get("category") != category:
                    entry["category"] = category
                    entry["updated_at"] = now
            superseded = []
            if category is not None:
                for other in entries:
                    found = category_of(other["line"]) if category_of is not None else other.get("category")
                    if other is not entry and other["status"] == "active" and found == category:
                        other.update(status="superseded", superseded_at=now, superseded_by=entry["id"])
                        superseded.append(other)
                        markdown[other["file"]] = _remove_entries(markdown[other["file"]], {other["line"]})
            if text not in entries_of(markdown[file]):
                markdown[file] = _append_entry(markdown[file], text)
            changes = self._changes(loaded, markdown, entries, before)
            self._commit(loaded, changes, "promote")
        return Promotion(text, file, category, created, bool(changes), dict(entry), [dict(e) for e in superseded])

    def forget(self, line: str) -> bool:
        """Forget a line: every active ledger entry that matches is marked forgotten (forgotten_at), and
        every matching entry is removed from USER.md and MEMORY.md. Matching ignores case, a list
        marker, repeated spaces and trailing punctuation ("prefer typescript" forgets "Prefer
        TypeScript."). A matching hand-written line is removed too (the user asked) and recorded in
        the ledger as forgotten with promoted_at null. True if anything was forgotten."""
        key = _loose(clean_line(line))
        with self._lock():
            self._recover_if_needed()
            loaded, entries, before, markdown = self._load()
            now = _iso(_now())
            forgotten = set()
            for entry in entries:
                if entry["status"] == "active" and _loose(entry["line"]) == key:
                    entry.update(status="forgotten", forgotten_at=now)
                    forgotten.add((entry["file"], entry["line"]))
            for name in WRITABLE:
                removed = [t for t in entries_of(markdown[name]) if _loose(t) == key]
                if not removed:
                    continue
                markdown[name] = _remove_entries(markdown[name], set(removed))
                for text in dict.fromkeys(removed):
                    if (name, text) not in forgotten:  # hand-written: record why it disappeared
                        entry = _new_entry(entries, text, name, None, [], now)
                        entry.update(status="forgotten", promoted_at=None, updated_at=None, forgotten_at=now)
                        entries.append(entry)
            changes = self._changes(loaded, markdown, entries, before)
            self._commit(loaded, changes, "forget")
        return bool(changes)

    def compact(self, name: str, dry_run: bool) -> Compaction:
        """Drop from USER.md or MEMORY.md the entries whose ledger entries for that file are all
        superseded or forgotten, and repeated entries (the first stays). Everything else stays as it
        is. Returns the unified diff; applied (not `dry_run`) and non-empty, a dated backup
        `<name>.<YYYY-MM-DDTHHMMSSZ>.bak` is written first. Deterministic and idempotent; the ledger
        is not changed. SOUL.md and shared snippets are never compacted (ProfileError)."""
        if name not in WRITABLE:
            raise ProfileError(
                f"compact works on USER.md and MEMORY.md only, not {name!r}: SOUL.md and the "
                "shared snippets are never compacted."
            )
        if dry_run:
            self._settle()
            return self._compaction(self._snapshot(), name)[0]
        with self._lock():
            self._recover_if_needed()
            loaded = self._snapshot()
            result, new_text = self._compaction(loaded, name)
            if not result.diff:
                return result
            self._check_drift(name, loaded[name][1])
            result.backup = self._write_backup(name, loaded[name][0] or "")
            self._commit(loaded, [(name, new_text)], "compact")
            result.applied = True
        return result

    # -- internals -----------------------------------------------------------------------------

    def _path(self, name: str) -> str:
        return os.path.join(self.folder, name)

    def _lock(self) -> _ProfileLock:
        parts = os.path.relpath(self.folder, self.home).split(os.sep)
        return _ProfileLock(self.home, parts, folder_mode=FOLDER_MODE, file_mode=FILE_MODE, prepare=atomicfile.sweep)

    def _sources(self, include_protected: bool) -> list[tuple[str, str]]:
        """(label, text) in injection order: shared snippets, USER.md, SOUL.md, MEMORY.md."""
        self._settle()
        sources = [(f"shared/{name}", text) for name, text in self.shared()]
        for name in (USER, SOUL, MEMORY):
            if name != SOUL or include_protected:
                sources.append((name, _read_text_lenient(self._path(name))))
        return sources

    def _load(self) -> tuple[dict, list[dict], str, dict[str, str]]:
        """Under the lock: the files as loaded (text, stamp), the ledger's entries, their fingerprint
        (to tell whether the ledger changed) and the writable Markdown files' texts."""
        loaded = self._snapshot()
        entries = self._parse_ledger(loaded[LEDGER][0])
        return loaded, entries, _fingerprint(entries), {name: loaded[name][0] or "" for name in WRITABLE}

    def _snapshot(self) -> dict[str, tuple[str | None, Stamp | None]]:
        """USER.md, MEMORY.md and promotions.json as loaded now: (text or None, stamp or None)."""
        return {name: _load(self._path(name)) for name in (USER, MEMORY, LEDGER)}

    def _parse_ledger(self, text: str | None) -> list[dict]:
        if text is None:
            return []
        import json

        path = self._path(LEDGER)
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ProfileUnavailable(
                f"{path} is not valid JSON ({exc}): fix it or move it away; nothing was written."
            ) from None
        problem = _ledger_problem(data)
        if problem:
            raise ProfileUnavailable(
                f"{path} is not a promotions ledger ({problem}): fix it or move it away; nothing was written."
            )
        return data["entries"]

    def _changes(self, loaded: dict, markdown: dict, entries: list[dict], before: str) -> list[tuple[str, str]]:
        """The files to write, Markdown first and the ledger last, after the budget check."""
        changes = []
        for name in WRITABLE:
            old = loaded[name][0] or ""
            new = markdown[name]
            if new == old:
                continue
            budget = BUDGETS[name]
            if len(new) > budget and len(new) > len(old):
                raise BudgetError(
                    f"{name} would be {len(new):,} characters; its budget is {budget:,}: forget or compact lines first."
                )
            changes.append((name, new))
        if _fingerprint(entries) != before:
            changes.append((LEDGER, _render_ledger(entries)))
        return changes

    def _compaction(self, loaded: dict, name: str) -> tuple[Compaction, str]:
        old = loaded[name][0] or ""
        entries = self._parse_ledger(loaded[LEDGER][0])
        active = {e["line"] for e in entries if e["file"] == name and e["status"] == "active"}
        retired = {e["line"] for e in entries if e["file"] == name and e["status"] != "active"} - active
        kept, removed, seen = [], [], set()
        for raw in old.split("\n"):
            text = entry_text(raw)
            if text is not None and (text in retired or text in seen):
                removed.append(text)
                continue
            if text is not None:
                seen.add(text)
            kept.append(raw)
        new = "\n".join(kept)
        return Compaction(name, _unified_diff(old, new, name), removed, None, False), new

    def _write_backup(self, name: str, text: str) -> str:
        stamp = time.strftime("%Y-%m-%dT%H%M%SZ", time.gmtime(_now()))
        path = self._path(f"{name}.{stamp}.bak")
        n = 2
        while os.path.exists(path):
            path = self._path(f"{name}.{stamp}-{n}.bak")
            n += 1
        _write_atomic(path, text)
        return path

    def _check_drift(self, name: str, expected: Stamp | None) -> None:
        _, now = _load(self._path(name), strict=False)
        check_unchanged(self._path(name), expected, now)

    def _commit(self, loaded: dict, changes: list[tuple[str, str]], operation: str) -> None:
        """Write `changes` (Markdown first, the ledger last) as one transaction. Call under the lock.

        1. drift check of every target; 2. intent.json (old and new contents) written atomically;
        3. each file written atomically, re-checked for drift just before its rename; 4. intent.json
        removed. An exception in 3 restores the files already written and removes the intent; if that
        restore fails too, the intent stays and the next `Profile.open` rolls it forward.
        """
        if not changes:
            return
        import json

        for name, _ in changes:
            self._check_drift(name, loaded[name][1])
        intent = {
            "version": LEDGER_VERSION,
            "operation": operation,
            "pid": os.getpid(),
            "created_at": _iso(_now()),
            "files": [{"name": name, "old": loaded[name][0], "new": new} for name, new in changes],
        }
        intent_path = self._path(INTENT)
        _write_atomic(intent_path, json.dumps(intent, ensure_ascii=False, indent=1) + "\n")
        _crash_point("intent")
        written = []
        try:
            for name, new in changes:
                if name == LEDGER:
                    _crash_point("markdown")
                self._check_drift(name, loaded[name][1])
                _write_atomic(self._path(name), new)
                written.append(name)
            if LEDGER not in written:
                _crash_point("markdown")
            _crash_point("ledger")
        except BaseException:
            try:
                for name in reversed(written):
                    old = loaded[name][0]
                    if old is None:
                        _remove(self._path(name))
                    else:
                        _write_atomic(self._path(name), old)
                _remove(intent_path)
            except OSError:
                pass  # the intent stays: the next Profile.open rolls the operation forward, consistently
            raise
        _remove(intent_path)

    def _recover_if_needed(self) -> None:
        """Under the lock: finish a write another process left unfinished."""
        if os.path.exists(self._path(INTENT)):
            self._recover()

    def _settle(self) -> None:
        """Before reading: an intent on disk is either a write in progress (taking the lock waits for it to
        end) or a crashed one (recovered here), so readers never see the Markdown and the ledger disagree.
        One stat when there is nothing to do."""
        if os.path.exists(self._path(INTENT)):
            with self._lock():
                self._recover()

    def _recover(self) -> None:
        """Finish a write that was interrupted by a crash. Call under the lock.

        The intent was complete and durable before any file was touched, and its new contents were
        computed under the lock from a consistent state and already checked (budget, drift): it is a
        redo record. So recovery rolls *forward*: each target still at its old content gets its new
        content; targets already at the new content stay. Rolling back would be consistent too, but it
        would silently undo a promotion the user's sessions earned (or a forget the user asked for).
        A target that is at neither (edited by hand after the crash) is kept as the person left it
        and named in `self.recovery["kept"]`: hand edits are the truth, as everywhere else.
        """
        import json

        path = self._path(INTENT)
        try:
            with open(path, "rb") as handle:
                intent = json.loads(handle.read().decode("utf-8"))
        except FileNotFoundError:
            return
        except (ValueError, UnicodeDecodeError) as exc:
            raise ProfileUnavailable(
                f"{path} (an interrupted write's record) is damaged ({exc}): move it away, then "
                "check USER.md, MEMORY.md and promotions.json by hand."
            ) from None
        files = intent.get("files") if isinstance(intent, dict) else None
        if not isinstance(files, list) or not all(
            isinstance(f, dict)
            and f.get("name") in (USER, MEMORY, LEDGER)
            and isinstance(f.get("new"), str)
            and (f.get("old") is None or isinstance(f.get("old"), str))
            for f in files
        ):
            raise ProfileUnavailable(
                f"{path} (an interrupted write's record) is not in the expected form: move it "
                "away, then check USER.md, MEMORY.md and promotions.json by hand."
            )
        written, kept = [], []
        for record in files:
            target = self._path(record["name"])
            current, _ = _load(target, strict=False)
            if current == record["new"]:
                continue
            if current == record["old"]:
                _write_atomic(target, record["new"])
                written.append(record["name"])
            else:
                kept.append(record["name"])
        self._remove_temp_files()
        _remove(path)
        self.recovery = {
            "action": "rolled forward" if written else "completed",
            "operation": intent.get("operation"),
            "written": written,
            "kept": kept,
        }

    def _remove_temp_files(self) -> None:
        """Temp files are only made under the lock, so any found while holding it were left by a crash."""
        with os.scandir(self.folder) as found:
            stale = [e.path for e in found if atomicfile.is_temp_name(e.name) and e.is_file(follow_symlinks=False)]
        for path in stale:
            _remove(path)

    def sweep(self) -> tuple[int, int]:
        """Remove the temp files that writers killed mid-write left in the profile folder (stale ones
        only: see atomicfile.sweep); (files, bytes)."""
        try:
            fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:  # no profile yet (or not a folder: the next write says so)
            return 0, 0
        try:
            files, size, _ = atomicfile.sweep(fd)
        finally:
            os.close(fd)
        return files, size


class _ProfileLock(FolderLock):
    """The profile folder's lock (see folderlock.py), held across every read-modify-write; taking it
    sweeps the temp files that killed writers left there. A link between HIVELORE_HOME and the
    profile is refused as every refusal of the profile is, with a ProfileError."""

    __slots__ = ()

    def __enter__(self) -> _ProfileLock:
        try:
            super().__enter__()
        except confined.LinkRefused as exc:
            raise ProfileError(str(exc)) from None
        return self


# -- lines ------------------------------------------------------------------------------------------


def check_profile_id(profile_id: str) -> str:
    if not isinstance(profile_id, str) or not 1 <= len(profile_id) <= 64 or not _ID_CHARS.issuperset(profile_id):
        raise ProfileError(f"{profile_id!r} is not a profile id: use 1 to 64 letters, digits, '_' or '-'.")
    return profile_id


def entry_text(raw: str) -> str | None:
    """The text of a top-level Markdown list item (`- `, `* ` or `+ ` at column 0), else None."""
    line = raw.lstrip("\ufeff")
    if len(line) >= 2 and line[0] in "-*+" and line[1] in " \t":
        return line[2:].strip() or None
    return None


def entries_of(text: str) -> list[str]:
    """The entries (list items' text) of a Markdown file, in order."""
    return [t for t in (entry_text(raw) for raw in text.split("\n")) if t is not None]


def clean_line(line: str) -> str:
    """A fact or preference as stored: one line, outer spaces and a leading list marker removed."""
    if not isinstance(line, str):
        raise ProfileError("a profile line must be text, such as 'Prefer TypeScript.'.")
    text = line.strip()
    marked = entry_text(text)
    if marked is not None:
        text = marked
    if not text or text in "-*+":
        raise ProfileError("the line is empty: give one fact or preference, such as 'Prefer TypeScript.'.")
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise ProfileError("a profile line must be a single line without control characters: give one fact per line.")
    return text


def _display_line(raw: str) -> str:
    text = entry_text(raw)
    return text if text is not None else raw.strip().lstrip("\ufeff").strip()


def _loose(text: str) -> str:
    """The matching key of `forget`: case-folded, spaces collapsed, trailing punctuation dropped."""
    return " ".join(text.casefold().split()).rstrip(" .!;。")


def _remove_entries(text: str, remove: set[str]) -> str:
    return "\n".join(raw for raw in text.split("\n") if entry_text(raw) not in remove)


def _append_entry(text: str, line: str) -> str:
    newline = "\r\n" if "\r\n" in text else "\n"
    if text and not text.endswith("\n"):
        text += newline
    return f"{text}- {line}{newline}"


def _fit(body: str, name: str, budget: int) -> str:
    """`body` cut to `budget` characters at a line boundary, saying how much was left out."""
    if len(body) <= budget:
        return body
    lines = body.split("\n")
    kept, size = [], 0
    for line in lines:
        if size + len(line) + 1 > budget:
            break
        kept.append(line)
        size += len(line) + 1
    left = len(lines) - len(kept)
    return "\n".join(kept) + (
        f"\n({left} more line{'s' if left != 1 else ''} left out: {name} is over its budget "
        f"of {budget:,} characters; run `hivelore profile compact {name}`)"
    )


def _unified_diff(old: str, new: str, name: str) -> str:
    if old == new:
        return ""
    import difflib

    out = []
    for line in difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{name}", tofile=f"b/{name}"
    ):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _check_readable(name: str, include_protected: bool) -> None:
    if name not in PROFILE_FILES:
        raise ProfileError(f"{name!r} is not a profile file: use USER.md, MEMORY.md or SOUL.md.")
    if name == SOUL and not include_protected:
        raise ProfileError(
            "SOUL.md is protected: read it only on purpose, with include_protected (--include-protected)."
        )


def _check_writable(name: str, what: str) -> None:
    if name == SOUL:
        raise ProfileError(
            f"SOUL.md is protected: {what} never writes it; edit it by hand, or use USER.md or MEMORY.md."
        )
    if name not in WRITABLE:
        raise ProfileError(f"{name!r} is not a profile file {what} writes: use USER.md or MEMORY.md.")


def _clean_sessions(sessions: list[str]) -> list[str]:
    if isinstance(sessions, str) or not all(isinstance(s, str) and s for s in sessions):
        raise ProfileError("sessions must be a list of session ids (non-empty strings).")
    return list(dict.fromkeys(sessions))


# -- the ledger -------------------------------------------------------------------------------------


def _new_entry(entries: list[dict], line: str, file: str, category: str | None, sessions: list[str], now: str) -> dict:
    return {
        "id": max((e["id"] for e in entries), default=0) + 1,
        "line": line,
        "file": file,
        "category": category,
        "status": "active",
        "sessions": list(sessions),
        "promoted_at": now,
        "updated_at": now,
        "superseded_at": None,
        "superseded_by": None,
        "forgotten_at": None,
    }


def _ledger_problem(data: object) -> str:
    """What makes `data` not a ledger, or "" when it is one."""
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        return 'expected an object with an "entries" list'
    for n, entry in enumerate(data["entries"], 1):
        if not isinstance(entry, dict):
            return f"entry {n} is not an object"
        if not isinstance(entry.get("id"), int) or isinstance(entry.get("id"), bool):
            return f"entry {n} has no integer id"
        if not isinstance(entry.get("line"), str) or not entry["line"]:
            return f"entry {n} has no line"
        if entry.get("file") not in WRITABLE:
            return f"entry {n} has file {entry.get('file')!r}, not USER.md or MEMORY.md"
        if entry.get("status") not in STATUSES:
            return f"entry {n} has status {entry.get('status')!r}, not active, superseded or forgotten"
        sessions = entry.get("sessions")
        if not isinstance(sessions, list) or not all(isinstance(s, str) for s in sessions):
            return f"entry {n} has no list of sessions"
        if entry.get("category") is not None and not isinstance(entry.get("category"), str):
            return f"entry {n} has a category that is not text"
    return ""


def _render_ledger(entries: list[dict]) -> str:
    import json

    return json.dumps({"version": LEDGER_VERSION, "entries": entries}, ensure_ascii=False, indent=2) + "\n"


def _fingerprint(entries: list[dict]) -> str:
    import json

    return json.dumps(entries, sort_keys=True, ensure_ascii=False)


# -- files ------------------------------------------------------------------------------------------


def _now() -> float:
    """The clock (tests replace it)."""
    return time.time()


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _load(path: str, strict: bool = True) -> tuple[str | None, Stamp | None]:
    """(text, stamp) of a file, (None, None) when it does not exist. Not UTF-8: ProfileError when
    `strict` (it is about to be rewritten), otherwise decoded with replacement characters."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ProfileError(
                f"{path} is a symbolic link, and hivelore does not follow links in its home: "
                "replace it with the file itself."
            ) from None
        raise
    with open(fd, "rb") as handle:
        data = handle.read()
        st = os.fstat(handle.fileno())
    stamp = Stamp.of(data, st)
    try:
        return data.decode("utf-8"), stamp
    except UnicodeDecodeError as exc:
        if strict:
            raise ProfileError(
                f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}): save it as UTF-8; nothing was written."
            ) from None
        return data.decode("utf-8", "replace"), stamp


def _read_text_lenient(path: str) -> str:
    return _load(path, strict=False)[0] or ""


def _write_atomic(path: str, text: str) -> None:
    private_folder(os.path.dirname(path))
    atomicfile.replace(path, text.encode("utf-8"), permissions=FILE_MODE)


def _remove(path: str) -> None:
    atomicfile.remove(path)


def _crash_point(stage: str) -> None:
    """The crash tests' hook (see CRASH_ENV): die here, without cleanup, when asked to."""
    if os.environ.get(CRASH_ENV) == stage:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
