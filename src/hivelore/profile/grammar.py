"""The promotion grammar: which parts of one direct user message state a preference or a project fact.

Fixed patterns only, in English and Arabic; no model decides anything. A message is cut into units
(paragraphs; every code line is a unit of its own), a unit into sentences, and a sentence counts only
when it *starts* with an accepted form (after fillers such as "Also," or "btw"). Each statement becomes
one English line: `Prefer X.` (USER.md), `Project uses X.`, `Run tests with CMD.`, `Run TASK with CMD.` or
`X is stored under PATH.` (MEMORY.md). docs/profile-grammar.md lists every form and the reason for every rule.

A preference-looking sentence is refused with the first reason that applies: it stands in a code block,
in quotes or backticks; it follows a marker that reports someone else or labels a program's output; it
stands in pasted tool output; the message or its paragraph is too long to be a direct statement; it is a
question or a near miss ("I like X"); its value is vague, too long, quoted (any quote style), markup, a
credential, or (in mixed Arabic) not a technical token; and last, the guard finds a secret,
prompt-injection phrasing or an invisible/bidi character anywhere in the message or its lines.

Runs on the hook path after every user turn: only `re` at import. `hivelore.memory.guard` (~20 ms to import,
mostly `dataclasses`) is imported only when a message states something that passed every other rule.
"""

from __future__ import annotations

import re

USER, MEMORY = "USER.md", "MEMORY.md"
CATEGORIES = ("reply_verbosity", "default_language", "test_command", "package_manager", "code_style")

# Someone typing a preference writes a short message; a longer one is a paste, and so is a long paragraph.
_MAX_MESSAGE = 2000
_MAX_PARAGRAPH = 300
# USER.md holds 1,375 characters in all: a longer value is a description, not a preference.
_MAX_VALUE = 80

CODE = "code block"
QUOTED = "quoted text"
BACKTICKED = "backticked text"
TOOL_OUTPUT = "tool output"
LONG_MESSAGE = f"too long to be a direct statement (message over {_MAX_MESSAGE:,} characters)"
LONG_PARAGRAPH = f"too long to be a direct statement (in a paragraph over {_MAX_PARAGRAPH} characters)"
LONG_VALUE = f"too long to be a direct statement (value over {_MAX_VALUE} characters)"
QUESTION = "near miss: a question is not a stated preference"
HEDGED = "near miss: 'I think I prefer X' is not a stated preference"
LIKE = "near miss: 'I like X' is not a stated preference"
MAYBE = "near miss: 'Maybe use X' is not a stated preference"
CAN_WE = "near miss: 'Can we use X' is not a stated preference"
TRY = "near miss: 'Try X' is not a stated preference"
SWITCH = "near miss: 'Switch to X' without 'by default' is not a stated preference"
VAGUE = "near miss: 'I prefer it' names no preference"
NOT_TECHNICAL = "not a technical token: natural-language phrase in mixed Arabic"
NOT_A_PATH = "not a path: 'X is stored under PATH' needs a path such as tests/fixtures"
INJECTION = "injection-like"
MARKUP = "markup or script in the value"
CREDENTIAL = "secret-like (a credential word followed by a value)"
INVISIBLE = "invisible or bidi control character"

_LINES = {"prefer": "Prefer {}.", "uses": "Project uses {}.", "tests": "Run tests with {}."}


class Candidate:
    """One normalised line to promote, the file it belongs to, and its comparison key."""

    __slots__ = ("line", "file", "key")

    def __init__(self, line: str, file: str) -> None:
        self.line = line
        self.file = file
        # Matches the same statement across sessions whatever its case or spacing.
        self.key = " ".join(line.casefold().split())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Candidate) and (self.line, self.file) == (other.line, other.file)

    def __hash__(self) -> int:
        return hash((self.line, self.file))

    def __repr__(self) -> str:
        return f"Candidate({self.line!r}, {self.file!r})"


class Refusal:
    """A preference-looking part of a message that does not count, and why."""

    __slots__ = ("text", "reason")

    def __init__(self, text: str, reason: str) -> None:
        self.text = text
        self.reason = reason

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Refusal) and (self.text, self.reason) == (other.text, other.reason)

    def __hash__(self) -> int:
        return hash((self.text, self.reason))

    def __repr__(self) -> str:
        return f"Refusal({self.text!r}, {self.reason!r})"


# -- Arabic -----------------------------------------------------------------------------------------

# Matching sees Arabic folded: harakat, superscript alef and tatweel dropped ("أفضّل", "أفضـــل"), and the
# letters people type interchangeably made one (hamza forms of alef, alef maqsura and Persian yeh, ta
# marbuta and ha, Persian kaf). Patterns are folded the same way, so they are written in plain spelling.
_DROPPED = frozenset(map(chr, [*range(0x064B, 0x0660), 0x0670, 0x0640]))
_FOLD = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ٱ": "ا", "ى": "ي", "ی": "ي", "ة": "ه", "ک": "ك"})
_ARABIC = "[\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufefc]"


def _ar(pattern: str) -> str:
    """Regex source for Arabic words as matching sees them; a space matches any whitespace."""
    return "".join(char for char in pattern if char not in _DROPPED).translate(_FOLD).replace(" ", r"\s+")


def _fold(text: str) -> tuple[str, list[int] | None]:
    """`text` as matching sees it, and the index in `text` of each of its characters (None: unchanged)."""
    if not re.search(_ARABIC, text):
        return text, None
    kept = [index for index, char in enumerate(text) if char not in _DROPPED]
    return "".join(text[index] for index in kept).translate(_FOLD), [*kept, len(text)]


def _form(pattern: str) -> str:
    """Case-insensitive regex source. Sources are compiled on first use, through `re`'s own cache: most
    messages never get past the prefilter, and compiling the whole grammar costs ~10 ms."""
    return "(?i)" + pattern


# -- message structure ------------------------------------------------------------------------------

_FENCE = r" {0,3}(`{3,}|~{3,})"
_INDENTED = r" {4}|\t"
_BLOCKQUOTE = r" {0,3}>"
_LIST_ITEM = r"\s*(?:[-*+•]|\d{1,3}[.)])\s"
_BLOCKQUOTE_MARKS = r"(?m)^ {0,3}(?:> ?)+"
_LIST_MARKS = r"(?m)^\s*(?:[-*+•]|\d{1,3}[.)])(?=\s)"
# A line ending in a bare prefix or a connector goes on on the next line: "I prefer\nTypeScript".
_JOIN_END = _form(
    r"(?:(?<!\w)(?:prefer|is|are|to|use|uses|with|using|via|under|in|and|or|for|of|the|a|an|by)|:|(?<!\w)(?:"
    + _ar("افضل|نفضل|استخدم|استعمل|يستخدم|باستخدام|بـ|ب|الردود|ردودك")
    + r"))\s*$"
)
_SENTENCE_END = r"(?<=[.!?؟۔。;؛])\s+"
# Quotation and code spans; an unclosed one runs to the end of its paragraph. A straight single quote opens
# only at a word start and closes at a word end ("I'd" is no quote), within one bounded line.
_SPAN = (
    r"(?P<tick>`+)[\s\S]*?(?:(?P=tick)|\Z)"
    r"|\"[^\"]*(?:\"|\Z)|[“„‟][^“”‟]*(?:[“”‟]|\Z)|«[^»]*(?:»|\Z)|‹[^›]*(?:›|\Z)"
    r"|[‘‚][\s\S]*?(?:[’‘](?!\w)|\Z)"
    r"|(?<!\w)'(?=\S)[^'\n]{0,200}(?<=\S)'(?!\w)"
)
_SHOWN_MARKS = r"^(?:(?:>+|[-*+•]|\d{1,3}[.)])\s+|[*:،,;]+\s*)+"
_QUOTE_CHARS = "`\"'“”„‟«»‹›‘’‚"
_CODE_SPAN = r"(`+)(.+?)\1"
_WRAPPED = r"`+([^`]+)`+"
# Any quotation mark in a value means someone else's words or an example, whatever the quote style; an
# apostrophe inside a word ("Rust's") is none.
_QUOTE_MARK = r"[\"“”„‟«»‹›‚]|(?<!\w)['‘’]|['‘’](?!\w)"
_TYPOGRAPHIC_QUOTE = r"[“”„‟«»‹›‘’‚]"
_WRAPPED_IN_QUOTES = r"\"[^\"]*\"|[“„‟][^“”‟]*[“”‟]|«[^»]*»|‹[^›]*›|'[^']*'|[‘‚][^‘’]*[’‘]"
_TRAILING = ".!,;:…。،؛۔"

# A label for what a program printed: "Tool output: I prefer concise replies" is its text, not yours.
_OUTPUT_LABEL = (
    r"\b(?:(?:tool|command|cmd|program|terminal|console|shell|script|build|test|ci|compiler|linter|server)\s+)?"
    r"(?:output|result|results|log|logs|stdout|stderr)\s*:|(?<!\w)و?"
    + _ar("(?:مخرجات|ناتج|نتيجة|سجل)(?: (?:ال)?(?:اداة|امر|اوامر|برنامج|طرفية|بناء))?")
    + r"\s*:"
)
# Someone else's words follow: an agent's note, what a document or another person says, a request to
# summarise or translate pasted text, a transcript label. Everything from the marker on is theirs.
_REPORT = _form(
    "|".join(
        (
            r"\b(?:sub-?agent|agent|assistant)(?:['’]s)?\s+(?:notes?|output|summary|report|reply|response)\s*:",
            r"\bnotes?\s+from\s+(?:the\s+|an?\s+)?(?:sub-?agent|agent|assistant)\b",
            r"\b(?:(?:the|an?|my)\s+)?(?:(?:earlier|previous|prior|last|other)\s+)?"
            r"(?:sub-?agent|assistant|agent|model|ai|bot|claude|chatgpt|gpt|copilot|codex|gemini|cursor|llm)\s+"
            r"(?:said|says|wrote|writes|suggested|suggests|replied|answered|reported|recommended|claimed|claims)\b",
            r"\byou\s+(?:said|wrote|suggested|claimed)\b",
            r"\b(?:(?:the|this|that|my|his|her|their|an?)\s+)?(?:(?:attached|pasted|above|following|enclosed)\s+)?"
            r"(?:resume|cv|document|doc|file|email|e-mail|message|article|transcript|log|page|readme|ticket|issue"
            r"|post|text|spec|paper|letter|report|comment|profile|bio)\s+"
            r"(?:says|said|states|stated|reads|mentions|claims|contains|notes|lists)\b",
            r"\b(?:he|she|they|someone|somebody|(?:my|our|the)\s+(?:colleague|coworker|co-worker|boss|manager"
            r"|teammate|friend|client|customer|team|lead|reviewer|user|author|candidate))\s+"
            r"(?:said|says|wrote|writes|thinks|told\s+me|mentioned)\b",
            r"\b(?:summari[sz]e|translate|paraphrase|rewrite|proofread|review|analy[sz]e|explain|critique)\s+"
            r"(?:this|these|that|the\s+following|it|below)\b",
            r"\baccording\s+to\b",
            _OUTPUT_LABEL,
            r"\b(?:quote|quoting|excerpt|transcript|forwarded\s+message|original\s+message)\s*:",
            r"\bhere(?:['’]s|\s+is|\s+are)\s+(?:(?:the|a|an|my|some|his|her|their)\s+)?(?:\w+\s+)?"
            r"(?:log|logs|output|transcript|resume|cv|document|email|message|text|excerpt|conversation|chat|notes?)\b",
            r"(?m:^)[ \t]*(?:assistant|ai|human|user|claude|chatgpt|gpt|system|model|bot)[ \t]*:",
            r"(?<!\w)و?" + _ar("(?:لخص|ترجم) (?:هذا|هذه|ما يلي|التالي|النص)"),
            r"(?<!\w)و?" + _ar("ملاحظة (?:ال)?(?:وكيل|مساعد)"),
            r"(?<!\w)و?" + _ar("(?:ال)?سيرة(?: الذاتية)? (?:تقول|تذكر)"),
            r"(?<!\w)و?" + _ar("(?:قال|كتب|يقول|اقترح) (?:ال)?(?:مساعد|وكيل|نموذج)"),
            r"(?<!\w)و?" + _ar("(?:ال)?(?:مساعد|وكيل|نموذج) (?:قال|كتب|يقول|اقترح)"),
            r"(?<!\w)و?" + _ar("(?:ال)?(?:مستند|ملف|رسالة|مقال|وثيقة) (?:يقول|تقول|يذكر|تذكر)"),
            r"(?<!\w)و?" + _ar("(?:قال|قالت|كتب|يقول) (?:زميلي|مديري|العميل|المستخدم)"),
            r"(?<!\w)و?" + _ar("(?:حسب|بحسب|وفقا ل)"),
        )
    )
)

# Lines people do not type: test-runner output, stack traces, log lines, shell prompts, code frames.
_TOOL_OUTPUT = r"""(?mx)
      ^\s*Traceback[ ]\(most[ ]recent[ ]call[ ]last\):
    | ^\s+File[ ]".+",[ ]line[ ]\d+
    | ^\s*at[ ]\S+[ ]\(?\S+:\d+(?::\d+)?\)?\s*$
    | ^\s*(?:[\w.-]+@[\w.-]+(?::\S*)?\s*)?[$%❯][ ]\S
    | ^\s*>>>[ ]
    | ^E\s{2,}\S
    | ^(?:={5,}|_{5,}|-{20,}|(?:_[ ]){5,})
    | ^-{3,}[ ].*[ ]-{3,}$
    | ^\s*(?:FAILED|PASSED|FAIL|PASS|ERROR|ERR!|FATAL|CRITICAL|PANIC)\b
    | ^(?:ok|---[ ](?:FAIL|PASS):?)\s
    | ^\s*npm[ ](?:ERR!|WARN)
    | ^\s*\[(?:INFO|WARN|WARNING|ERROR|DEBUG|TRACE|FATAL|CRITICAL)\]
    | ^\s*(?:INFO|WARN|WARNING|DEBUG|TRACE)[:\x20]
    | ^\s*\[?\d{4}-\d{2}-\d{2}[T\x20]\d{2}:\d{2}
    | ^\s*(?:\w+\.)*\w*(?:Error|Exception|Warning):[ ]
    | ^\s*error(?:\[\w+\])?:[ ]
    | ^\s*[\w./\\-]+\.\w+:\d+(?::\d+)?:
    | ^\s*\S+\(\d+,\d+\):[ ]error
    | ^\s*(?:Tests?|Test[ ]Suites):\s+\d+
    | ^\s*\d+[ ](?:passed|failed)\b
    | ^\s*Ran[ ]\d+[ ]tests?[ ]in
    | ^(?:test[ ]result:[ ]|running[ ]\d+[ ]tests?$|failures:$)
    | ^\s*(?:Compiling|Finished|Running)[ ]\S.*(?:[ ]v\d|[ ]in[ ]\d|\()
    | ^test[ ]\S+[ ]\.\.\.[ ]
    | [ ]\.\.\.[ ](?:ok|FAIL|FAILED|ERROR|skipped|ignored)\b
    | \[\s*\d+%\]$
    | ^thread[ ]'.*'[ ].*panicked[ ]at
    | ^\s*>?\s*\d+[ ]\|
    | ^\s*●[ ]
    | ^\s*(?:Expected|Received):[ ]
    | ^\s*\w+[ ]=[ ]\S
    | exit(?:ed)?[ ](?:with[ ])?(?:code|status)[ ]\d+
    """

# -- sentence grammar -------------------------------------------------------------------------------

_FILLERS = _form(
    r"[\s,،:;!\-–—]*(?:(?:(?:also|and|so|ok|okay|btw|by\s+the\s+way|fyi|oh|yes|yeah|again|note|ps|p\.s\.|reminder"
    r"|just\s+so\s+you\s+know|for\s+the\s+record|as\s+always|as\s+a\s+reminder|remember\s+that|remember"
    r"|please|pls|hi|hey|thanks|in\s+general|going\s+forward|from\s+now\s+on)\b|(?:"
    + _ar("ايضا|كذلك|للعلم|بالمناسبة|تذكر (?:انني|اني|ان)|تذكر|من فضلك|لو سمحت|رجاء")
    + r")(?!\w))[\s,،:;!\-–—]*)*"
)
# "Please keep replies concise: I prefer concise replies". One word before the colon is a transcript's
# speaker ("Bob: I prefer Go"), not a lead-in.
_LABEL = r"[^\s:]+(?:\s+[^\s:]+)+\s*:\s+"
_TAIL_FILLER = _form(r"(?:[\s,،]+(?:please|pls|thanks|thank\s+you|thx|" + _ar("من فضلك|لو سمحت|رجاء|شكرا") + "))+$")
_AND = "(?:و)?"  # Arabic "and" is written attached: "وأفضل"
_AR_REPLIES = _ar("(?:ال)?(?:ردود|اجابات|رد|اجابة)(?:ك|ا)? ")
_AR_CONCISE = _ar("(?:ال)?(?:مختصرة|قصيرة|موجزة)")
_AR_DETAILED = _ar("(?:ال)?(?:مفصلة|طويلة|مطولة)")
_BY_DEFAULT = r"(?:by\s+default|as\s+(?:the\s+|my\s+|our\s+|a\s+)?default)"
_REPLY_NOUN = r"(?:replies|answers|responses)"
# What a project runs besides its tests: "run checks with pnpm lint" is `Run checks with pnpm lint.`
_TASK = (
    r"(?:the\s+)?(?:checks|lint|linting|linter|type\s*checks|type-checks|type\s+checking|typecheck|build|formatter"
    r"|(?:unit|integration|e2e|end-to-end)\s+tests|benchmarks)"
)

# (kind, pattern) tried in order with fullmatch; "Always use X by default" must meet the by-default form
# before "Always use X".
_FORMS = (
    (
        "prefer",
        _form(
            r"(?:(?:i|we)(?:\s+(?:want|need|would\s+like)|['’]d\s+like)(?:\s+to\s+use)?|(?:always\s+)?(?:use|switch\s+to))"
            r"\s+(?P<x>.+?)\s+" + _BY_DEFAULT
        ),
    ),
    # "please keep replies concise", "give me detailed replies", "I want short answers": x is the length.
    (
        "reply",
        _form(
            r"(?:keep|make)\s+(?:(?:all\s+)?(?:your|the|my)\s+)?"
            + _REPLY_NOUN
            + r"\s+(?:(?:more|very|really|nice\s+and)\s+)?(?P<x>[\w-]+)"
        ),
    ),
    (
        "reply",
        _form(
            r"(?:give\s+me|send\s+me|write|use|(?:i|we)(?:\s+(?:want|need|would\s+like)|['’]d\s+like))\s+"
            r"(?:(?:more|very|really)\s+)?(?P<x>[\w-]+(?:\s+depth)?)\s+" + _REPLY_NOUN
        ),
    ),
    (
        "prefer",
        _form(
            r"(?:i|we)(?:['’]d|\s+would)?\s+(?:(?:really|strongly|always|still|generally|usually|do)\s+)?"
            r"prefer\s*:?\s+(?P<x>.+)"
        ),
    ),
    ("prefer", _form(r"(?:my|our)\s+preference\s+is\s*:?\s+(?:for\s+)?(?P<x>.+)")),
    ("prefer", _form(r"(?:default\s+to|by\s+default\s*,?\s+use|always\s+use|(?:always\s+)?prefer)\s*:?\s+(?P<x>.+)")),
    ("uses", _form(r"(?:(?:the|this|our|my)\s+)?(?:project|repo|repository|codebase)\s+uses\s*:?\s+(?P<x>.+)")),
    (
        "tests",
        _form(
            r"(?:always\s+)?run\s+(?:the\s+|all\s+|our\s+)?(?:tests|test\s+suite)\s+(?:with|using|via)\s*:?\s+(?P<x>.+)"
        ),
    ),
    (
        "task",
        _form(r"(?:always\s+)?run\s+(?P<t>" + _TASK + r")\s+(?:with|using|via)\s*:?\s+(?P<x>.+)"),
    ),
    (
        "stored",
        _form(
            r"(?!(?:i|we|you|he|she|it|they|this|that|these|those|there|here|where|what|which|who)\b)"
            r"(?P<s>[^\s:]+(?:\s+[^\s:]+){0,5}?)\s+(?:(?P<v>is|are)\s+(?:stored|kept|located|persisted|saved|written"
            r"|cached)|(?P<l>lives?))\s+(?:under|in|at|inside|to|into)\s+(?P<x>.+)"
        ),
    ),
    ("prefer", _form(_AND + _ar("(?:(?:انا|احنا|نحن) )?(?:افضل|نفضل) (?:استخدام )?") + r"(?P<x>.+)")),
    (
        "prefer",
        _form(
            _AND
            + _ar("(?:استخدم|استعمل|نريد|اريد|نبي|ابي|نبغى|ابغى) ")
            + r"(?P<x>.+?)\s+"
            + _ar("(?:افتراضيا|كافتراضي|بشكل افتراضي|دائما)")
        ),
    ),
    ("prefer", _form(_AND + _ar("دائما (?:استخدم|استعمل) ") + r"(?P<x>.+)")),
    (
        "prefer",
        _form(
            _AND
            + _ar("(?:خلي|خل|اجعل|اعطني|اعطيني|عطني|اريد|نريد|ابي|ابغى) ")
            + f"(?P<x>{_AR_REPLIES}(?:{_AR_CONCISE}|{_AR_DETAILED}))"
        ),
    ),
    ("uses", _form(_AND + _ar("(?:(?:(?:هذا )?المشروع|مشروعنا) يستخدم|يستخدم (?:المشروع|مشروعنا)) ") + r"(?P<x>.+)")),
    ("tests", _form(_AND + _ar("(?:شغل|نفذ) (?:ال)?اختبارات (?:باستخدام|بواسطة|عبر|ب)") + r"\s*(?P<x>.+)")),
)

# Preference-looking sentences that state nothing; tried with match() only when no form matched.
_NEAR_MISSES = (
    (
        HEDGED,
        _form(
            r"(?:i\s+think|i\s+guess|i\s+suppose|i\s+believe|probably|maybe|perhaps)\s*,?\s+(?:i|we)"
            r"(?:['’]d|\s+would)?\s+prefer\b"
        ),
    ),
    (LIKE, _form(r"(?:i|we)\s+(?:(?:really|do|also)\s+)?(?:like|love|enjoy)\s+\S")),
    (
        MAYBE,
        _form(
            r"(?:maybe|perhaps|possibly)\s*,?\s+(?:(?:we|you)\s+(?:should|could|can)\s+|just\s+)?"
            r"(?:use|try|switch\s+to|go\s+with|prefer)\s+\S"
        ),
    ),
    (MAYBE, _form(r"let['’]?s\s+(?:use|go\s+with|switch\s+to)\s+\S")),
    (
        CAN_WE,
        _form(
            r"(?:can|could|should|shall|would|will)\s+(?:we|you|i)\s+(?:please\s+)?"
            r"(?:use|try|switch\s+to|go\s+with|default\s+to|prefer)\s+\S"
        ),
    ),
    (TRY, _form(r"(?:(?:please|just)\s+)?try\s+(?:using\s+|out\s+)?\S")),
    (SWITCH, _form(r"(?:(?:please|just)\s+)?(?:switch|change|move|migrate)\s+to\s+\S")),
    (LIKE, _form(_AND + _ar("(?:(?:انا|احنا) )?(?:احب|نحب|بحب) ") + r"\S")),
    (MAYBE, _form(_AND + _ar("(?:ربما|يمكن|لعل) (?:نستخدم|تستخدم|استخدم|نجرب)") + r"\s+\S")),
    (CAN_WE, _form(_AND + _ar("(?:هل )?(?:ممكن|يمكننا|نقدر) (?:نستخدم|تستخدم|استخدام|نجرب)") + r"\s+\S")),
    (TRY, _form(_AND + _ar("(?:جرب|جربي) ") + r"\S")),
    (SWITCH, _form(_AND + _ar("(?:بدل|حول|انتقل) (?:الى|ل)") + r"\s*\S")),
)

_FORGET = _form(
    r"(?:forget|unlearn|stop\s+remembering|don['’]t\s+remember|do\s+not\s+remember)\s+(?:that\s+|about\s+)?(?P<s>.+)"
    r"|" + _AND + _ar("(?:انس|انسى|انسي) (?:(?:انني|اني|ان) )?") + r"(?P<a>.+)"
)
# "forget my preference for X" and "I no longer prefer X" name the preference without a form.
_FORGET_PREFERENCE = _form(
    r"(?:(?:forget|unlearn)\s+(?:about\s+)?(?:my|our)\s+preference\s+for|(?:i|we)\s+no\s+longer\s+prefer)\s+(?P<x>.+)"
    r"|" + _AND + _ar("(?:(?:انس|انسى) تفضيلي (?:لـ|ل)|لم (?:اعد|نعد) (?:افضل|نفضل) )") + r"\s*(?P<a>.+)"
)

# A superset of the forms' keywords: a message with none of them is not parsed at all on the hook path.
_KEYWORDS = _form(
    r"prefer|default|always\s+use|(?:project|repo|repository|codebase)\s+uses|(?:tests|test\s+suite)\s+(?:with|using|via)"
    r"|\s(?:is|are)\s+(?:stored|kept|located|persisted|saved|written|cached)\s|\slives?\s|" + _REPLY_NOUN + "|"
    r"(?:checks|lint|linting|linter|type\s*checks|type-checks|checking|typecheck|build|formatter|tests|benchmarks)\s+"
    r"(?:with|using|via)|"
    + _ar("افضل|نفضل|افتراضي|دائما|مختصر|قصير|موجز|مفصل|طويل|مطول|يستخدم|(?:شغل|نفذ) (?:ال)?اختبارات")
)
_FORGET_KEYWORDS = _form(r"forget|unlearn|remember|no\s+longer|" + _ar("انس|لم (?:اعد|نعد)"))

_VERBOSITY = _form(
    r"(?:(?P<c>concise|short|shorter|brief|briefer|terse|succinct)"
    r"|(?:detailed|long|longer|thorough|verbose|in-depth|in\s+depth|comprehensive))\s+(?:replies|answers|responses)"
    f"|{_AR_REPLIES}(?:(?P<ac>{_AR_CONCISE})|{_AR_DETAILED})"
)
# A reason ends a value: "pnpm, because it is fast" names pnpm.
_REASON_CUT = _form(
    r"\s*[,،]\s*(?:not|but|as|so|though|although|since|because|if\s+possible|when\s+possible)\b"
    r"|\s+(?:because|since|cause|cuz)\b|\s+[—–]\s|\s+" + _ar("(?:لان|حتى)")
)
# A comparison stays ("Prefer tabs over spaces."): "composition over inheritance" means nothing cut short.
# Its Arabic connectors are fixed words, translated so that the line stays English.
_COMPARISON = _form(r"\s+(?:over|instead\s+of|rather\s+than|vs\.?|versus)\s+")
_AR_OVER = r"\s+" + _ar("(?:على|بدل|بدلا من|عوضا عن)") + r"\s+"
# Emoji and other symbols closing a sentence say nothing: "I prefer TypeScript 🙂".
_TRAILING_SYMBOLS = r"[^\w\s+#/.)\]*'\"`~?؟“”„‟«»‹›‘’‚<>-]+$"
_PARENTHETICAL = r"\s*\([^()]*\)$"
_PREFER_HEAD = _form(r"(?:to\s+use|using|the\s+use\s+of)\s+")
_DEFAULT_TAIL = _form(r"\s+(?:" + _BY_DEFAULT + "|" + _ar("افتراضيا|كافتراضي|بشكل افتراضي|دائما") + ")$")
_VAGUE_HEAD = _form(
    r"(?:it|this|that|these|those|them|both|either|neither|whatever|what|which|whichever|if|when|whether|one"
    r"|yours|mine|ours|something|anything|nothing|none|you|him|her|the\s+(?:former|latter|other|same|usual))(?:\s|$)"
)
_TOKEN = r"(?a)[A-Za-z0-9.~/@$-][\w.+#/@:=~$*\\-]*"
_TECHNICAL_MARK = r"[0-9.+#/@:=~_$\\-]|[a-z][A-Z]|^[A-Z]{2,}$"
# Markup and script: "<script>alert(1)</script>", "<img src=x onerror=…>", "javascript:". A generic type
# ("List<String>") is no tag: the "<" follows a word.
_MARKUP = _form(
    r"(?<![\w<])<\s*/?\s*[a-z][\w-]*(?:\s[^<>]*)?/?\s*>|<\s*/?\s*(?:script|iframe|img|svg|object|embed|style|link"
    r"|meta|body|html)\b|\bjavascript\s*:|\bon[a-z]{3,}\s*="
)
# A credential word followed by its value: "password hunter2", "api key: 8f3kQ9zL", "كلمة المرور hunter2".
# "password managers" and "token-based auth" name no credential: the word after must look like a value
# (a digit, an inner capital, a symbol), or come after ":" or "=".
_CREDENTIAL = _form(
    r"(?:\b(?:password|passwd|passphrase|pwd|passcode|secret(?:\s+key)?|api[\s_-]?key|access[\s_-]?key"
    r"|private[\s_-]?key|auth[\s_-]?token|token|credentials?)|"
    + _ar("كلمة (?:ال)?(?:مرور|سر)|(?:ال)?رمز (?:ال)?سري")
    + ")"
    r"(?:\s*[:=]\s*\S|\s+(?:is\s+)?(?=\S*(?:\d|(?-i:[a-z][A-Z])|[_$@!#%^&*=]))\S)"
)
_PATH = r"\S*[/\\]\S*|[.~$]\S+|\S+\.\w{1,8}"

# Names that make "pnpm test" a command and decide categories; compared case-folded.
_PACKAGE_MANAGERS = frozenset(
    {"npm", "pnpm", "yarn", "bun", "pip", "pip3", "pipenv", "poetry", "uv", "pdm", "hatch", "rye", "conda", "mamba"}
    | {"pixi", "cargo", "composer", "bundler", "gradle", "maven", "nuget"}
)
_TOOLS = _PACKAGE_MANAGERS | {
    "npx", "bunx", "uvx", "pipx", "pytest", "python", "python3", "node", "deno", "go", "make", "just", "tox", "nox",
    "jest", "vitest", "mocha", "rspec", "rake", "mix", "dotnet", "mvn", "swift", "ctest", "bazel", "docker",
}  # fmt: skip
_LANGUAGES = frozenset(
    {"typescript", "javascript", "ts", "js", "python", "go", "golang", "rust", "java", "kotlin", "swift", "c", "c++"}
    | {"c#", "ruby", "php", "scala", "elixir", "erlang", "haskell", "dart", "lua", "zig", "ocaml", "f#", "clojure"}
    | {"julia", "r", "perl", "objective-c", "bash"}
)
_INDENTATION = _form(
    r"(?:tabs|spaces|\d+\s+spaces|(?:tab|space|\d+-space)\s+(?:indent|indents|indentation)"
    r"|(?:tabs|spaces|\d+\s+spaces)\s+for\s+indentation|indent(?:ation)?\s+with\s+(?:tabs|spaces|\d+\s+spaces))"
)
_CATEGORY_LINE = _form(r"(?P<head>prefer|project\s+uses|run\s+tests\s+with)\s+(?P<x>.+?)\.?")
_VERSION = r"(?P<name>.+?)(?:\s*[@v]?\d[\w.]*)?"


# -- public API -------------------------------------------------------------------------------------


def candidates(message: str) -> list[Candidate]:
    """The lines ONE direct user message states (the caller guarantees user role and a root session)."""
    return _analyse(message, forget=False, explain=False)[0]


def examine(message: str) -> tuple[list[Candidate], list[Refusal]]:
    """The same candidates, with why each preference-looking part of the message was refused."""
    return _analyse(message, forget=False, explain=True)


def forget_requests(message: str) -> list[Candidate]:
    """The lines the message asks to forget: "forget that I prefer concise replies", "انسَ أني أفضل ..."."""
    return _analyse(message, forget=True, explain=False)[0]


def category(line: str) -> str | None:
    """The exclusive category of a normalised line (a newer line in it supersedes an older one), or None."""
    m = re.fullmatch(_CATEGORY_LINE, " ".join(line.split()))
    if m is None:
        return None
    head, value = m["head"].casefold(), re.split(_COMPARISON, m["x"])[0]  # "pnpm over npm" is about pnpm
    if head.startswith("run"):
        return "test_command"
    if head == "prefer" and re.fullmatch(_VERBOSITY, value):
        return "reply_verbosity"
    version = re.fullmatch(_VERSION, value)  # "pnpm 9", "Python 3.12", "uv@0.4"
    assert version is not None  # any text of one character or more matches
    name = version["name"].casefold()
    if name in _PACKAGE_MANAGERS:
        return "package_manager"
    if re.fullmatch(_INDENTATION, value):
        return "code_style"
    return "default_language" if head == "prefer" and name in _LANGUAGES else None


# -- the message ------------------------------------------------------------------------------------


class _Message:
    """What holds for the whole message while its sentences are judged. `text` is what matching sees
    (Arabic folded); `original` is what the user wrote, for showing refused parts."""

    __slots__ = ("original", "text", "index", "hidden", "too_long", "report", "report_ends")

    def __init__(self, message: str) -> None:
        text = message.replace("\r\n", "\n").replace("\r", "\n")
        # Matching sees through invisible characters, so that "I prefer \u202eX" is refused with its reason
        # rather than ignored; any that were there refuse every statement of the message.
        visible = "".join(char for char in text if char.isprintable() or char.isspace())
        self.hidden = len(visible) != len(text)
        self.original = _strip_end(visible)
        self.text, self.index = _fold(self.original)
        self.too_long = len(self.original) > _MAX_MESSAGE
        markers = list(re.finditer(_REPORT, self.text))
        self.report = markers[0] if markers else None
        self.report_ends = [marker.end() for marker in markers]

    def shown(self, start: int, end: int) -> str:
        """The original of text[start:end], one line, without list or blockquote markers."""
        if self.index is not None:
            start, end = self.index[start], self.index[end]
        return re.sub(_SHOWN_MARKS, "", " ".join(self.original[start:end].split())).rstrip("*")


def _analyse(message: str, forget: bool, explain: bool) -> tuple[list[Candidate], list[Refusal]]:
    if not explain and _cannot_state(message, forget):
        return [], []
    msg = _Message(message)
    accepted: list[tuple[str, Candidate]] = []
    refusals: list[Refusal] = []
    for start, end, text, (region, tool, long_paragraph) in _sentences(msg):
        parsed = _parse(text, forget)
        if parsed is None:
            continue
        candidate, grammar = parsed
        report = msg.report if msg.report is not None and msg.report.start() < end else None
        reason = (
            region
            or (report and _reported(msg, report))
            or tool
            or (LONG_MESSAGE if msg.too_long else None)
            or long_paragraph
            or grammar
        )
        if reason:
            refusals.append(Refusal(_strip_end(msg.shown(start, end)), reason))
        elif candidate is not None:  # no reason to refuse: _parse gave a candidate
            accepted.append((_strip_end(msg.shown(start, end)), candidate))
    safety = _safety_reason(msg, [candidate.line for _, candidate in accepted]) if accepted else None
    if safety:
        refusals.extend(Refusal(text, safety) for text, _ in accepted)
        accepted = []
    return list(dict.fromkeys(candidate for _, candidate in accepted)), refusals


def _reported(msg: _Message, marker: re.Match) -> str:
    if re.fullmatch(_form(_OUTPUT_LABEL), marker.group()):
        return TOOL_OUTPUT
    return f"reports someone else ('{msg.shown(*marker.span())}')"


def _cannot_state(message: str, forget: bool) -> bool:
    """The hook path's shortcut: a paste over the limit (or one padded with invisible characters), or a
    message without any form's keyword, states nothing. Must never reject what `examine` would accept."""
    if len(message) > _MAX_MESSAGE and len(_strip_end(message.replace("\r\n", "\n"))) > _MAX_MESSAGE:
        return True
    return re.search(_FORGET_KEYWORDS if forget else _KEYWORDS, _fold(message)[0]) is None


def _safety_reason(msg: _Message, lines: list[str]) -> str | None:
    """The guard's verdict on the whole message and on the lines it would promote (normalising a value,
    e.g. dropping backticks, must not assemble what the guard would have caught): a secret or an
    injection anywhere makes it a paste or an attack more likely than a preference."""
    from hivelore.memory.guard import inspect  # lazy: ~20 ms, paid only when a message states something

    violations = inspect("\n".join([msg.text, *lines]), "message")
    rule = violations[0].rule if violations else ""
    if rule.startswith("secret."):
        return f"secret-like (rule {rule})"
    if rule == "injection":
        return INJECTION
    return INVISIBLE if violations or msg.hidden else None


def _strip_end(text: str) -> str:
    """Drop trailing whitespace and sentence punctuation (not '?': a question stays one), but keep Go's
    package wildcard in "go test ./...", which is not punctuation."""
    while True:
        stripped = text.rstrip().rstrip(_TRAILING)
        if stripped == text:
            return text
        if stripped.endswith("/") and text[len(stripped) :].startswith("..."):
            return stripped + "..."
        text = stripped


# -- units and sentences ----------------------------------------------------------------------------


def _units(text: str) -> list[tuple[int, int, str | None]]:
    """(start, end, region) of each paragraph, code line and blockquote; a region is a refusal reason."""
    units: list[tuple[int, int, str | None]] = []
    current: list = []  # [start, end, region] of the paragraph being read
    fence = ""
    position = 0
    for line in text.split("\n"):
        start, position = position, position + len(line) + 1
        end = start + len(line)
        if fence or re.match(_FENCE, line):
            fence = _fence_after(fence, line)
            units += _close(current) + [(start, end, CODE)]
        elif not line.strip():
            units += _close(current)
        elif not current and re.match(_INDENTED, line):
            # Markdown: indented code starts only after a blank line; inside a paragraph it continues it.
            units.append((start, end, CODE))
        elif re.match(_BLOCKQUOTE, line) and (not current or current[2] is None):
            units += _close(current)
            current[:] = [start, end, QUOTED]
        elif current:
            current[1] = end  # a blockquote's lazy continuation stays quoted, as in Markdown
        else:
            current[:] = [start, end, None]
    return units + _close(current)


def _fence_after(fence: str, line: str) -> str:
    """The fence still open after `line`: one closes with the same character, at least as long, alone."""
    if not fence:
        opening = re.match(_FENCE, line)
        assert opening is not None  # the caller saw a fence open on this line
        return opening[1]
    closing = line.strip()
    return "" if closing == fence[0] * len(closing) and len(closing) >= len(fence) else fence


def _close(current: list) -> list[tuple[int, int, str | None]]:
    unit = [tuple(current)] if current else []
    current.clear()
    return unit


def _sentences(msg: _Message):
    """(start, end, text, (region, tool output, long paragraph)) of every sentence, in document order,
    then the sentences inside each quoted or backticked span."""
    for unit_start, unit_end, region in _units(msg.text):
        view, lines = _joined(msg.text[unit_start:unit_end], region)
        spans = [] if region else [m.span() for m in re.finditer(_SPAN, view)]
        pasted = region is None and re.compile(_TOOL_OUTPUT).search(msg.text, unit_start, unit_end)
        tool = TOOL_OUTPUT if pasted else None
        cuts = [end - unit_start for end in msg.report_ends if unit_start < end < unit_end]
        for line_start, line in lines:
            long_paragraph = LONG_PARAGRAPH if len(_strip_end(line.strip())) > _MAX_PARAGRAPH else None
            for start, end in _split(view, line_start, line_start + len(line), cuts):
                # A sentence that starts inside a span is judged below, as the content of its span.
                if not any(a < start < b for a, b in spans):
                    yield _sentence(view, start, end, unit_start, (region, tool, long_paragraph))
        for a, b in spans:
            reason = BACKTICKED if view[a] == "`" else QUOTED
            inner = view[a:b].strip(_QUOTE_CHARS)
            first = a + view[a:b].find(inner[:1]) if inner else b
            for start, end in _split(view, first, first + len(inner), []):
                yield _sentence(view, start, end, unit_start, (reason, None, None))


def _joined(unit: str, region: str | None) -> tuple[str, list[tuple[int, str]]]:
    """The unit with list and blockquote markers blanked and continued lines joined (same length, so
    offsets hold), and its logical lines with their offsets."""
    raw = unit.split("\n")
    view = re.sub(_LIST_MARKS, lambda m: " " * len(m.group()), unit)
    if region == QUOTED:
        view = re.sub(_BLOCKQUOTE_MARKS, lambda m: " " * len(m.group()), view)
    pieces = view.split("\n")
    joined = pieces[0]
    for index in range(1, len(pieces)):
        joins = region != CODE and re.search(_JOIN_END, pieces[index - 1]) and not re.match(_LIST_ITEM, raw[index])
        joined += (" " if joins else "\n") + pieces[index]
    lines, position = [], 0
    for line in joined.split("\n"):
        lines.append((position, line))
        position += len(line) + 1
    return joined, lines


def _split(view: str, start: int, end: int, cuts: list[int]) -> list[tuple[int, int]]:
    """Sentence spans of view[start:end]: cut at sentence punctuation, and after each report marker so
    that what it reports is judged (and refused) as a sentence of its own."""
    ends = [m.end() for m in re.compile(_SENTENCE_END).finditer(view, start, end)]
    ends += [cut for cut in cuts if start < cut < end]
    spans, previous = [], start
    for cut in sorted(set(ends)) + [end]:
        if view[previous:cut].strip():
            spans.append((previous, cut))
        previous = cut
    return spans


def _sentence(view: str, start: int, end: int, unit_start: int, reasons: tuple) -> tuple:
    """(start, end) in the message, the sentence as matching sees it (one line, no bold markers), reasons."""
    text = _strip_end(" ".join(view[start:end].split()).strip("*").strip())
    return unit_start + start, unit_start + end, text, reasons


# -- one sentence -----------------------------------------------------------------------------------


def _parse(sentence: str, forget: bool) -> tuple[Candidate | None, str | None] | None:
    """None when the sentence does not look like a statement; else (candidate, None) or (None, reason)."""
    text = _trim(re.sub(_TAIL_FILLER, "", _trim(sentence)))
    question = text.endswith(("?", "؟"))
    text = _strip_end(text.rstrip("?؟"))
    arabic = re.search(_ARABIC, sentence) is not None
    judge = _forget if forget else _statement
    body = _unfilled(text)
    result = judge(body, arabic, question)
    label = re.match(_LABEL, body) if result is None else None
    return judge(_unfilled(body[label.end() :]), arabic, question) if label else result


def _unfilled(text: str) -> str:
    fillers = re.match(_FILLERS, text)
    assert fillers is not None  # the fillers may be none at all: it matches every text
    return text[fillers.end() :]


def _trim(text: str) -> str:
    return _strip_end(re.sub(_TRAILING_SYMBOLS, "", _strip_end(text)))


def _statement(body: str, arabic: bool, question: bool) -> tuple[Candidate | None, str | None] | None:
    for kind, pattern in _FORMS:
        m = re.fullmatch(pattern, body)
        result = m and _matched(kind, m, arabic)
        if result:
            return (None, QUESTION) if question else result
    for reason, pattern in _NEAR_MISSES:
        if re.match(pattern, body):
            return None, reason
    return None


def _matched(kind: str, m: re.Match, arabic: bool) -> tuple[Candidate | None, str | None] | None:
    if kind == "stored":
        verb = m["v"] or ("is" if m["l"].casefold() == "lives" else "are")
        return _stored(m["s"], verb, m["x"], arabic)
    if kind == "reply":
        return _reply(m["x"])
    if kind == "task":
        return _build(kind, m["x"], arabic, " ".join(m["t"].casefold().split()))
    return _build(kind, m["x"], arabic)


def _forget(body: str, arabic: bool, question: bool) -> tuple[Candidate | None, str | None] | None:
    m = re.fullmatch(_FORGET_PREFERENCE, body)
    if m:
        result = _build("prefer", m["x"] or m["a"], arabic)
        return (None, QUESTION) if result and question else result
    m = re.fullmatch(_FORGET, body)
    if m is None:
        return None
    inner = m["s"] or m["a"]
    return _statement(_unfilled(inner), arabic, question)


def _build(kind: str, raw: str, arabic: bool, task: str = "") -> tuple[Candidate | None, str | None] | None:
    value, literal, quoting = _value(raw, kind)
    if not any(char.isalnum() for char in value):
        return None
    verbosity = re.fullmatch(_VERBOSITY, value) if kind == "prefer" else None
    if verbosity:
        length = "concise" if verbosity["c"] or verbosity["ac"] else "detailed"
        return Candidate(f"Prefer {length} replies.", USER), None
    command = kind in ("tests", "task")
    # Upper case is an acronym, not a pronoun: "I prefer IT" is not "I prefer it".
    if not command and not value.split()[0].isupper() and re.match(_VAGUE_HEAD, value):
        return None, VAGUE
    if len(value) > _MAX_VALUE:
        return None, LONG_VALUE
    unsafe = quoting or _unsafe(value)
    if unsafe:
        return None, unsafe
    # Mixed Arabic: lines are English, so only what needs no translation may be promoted. A command slot
    # ("run tests with") takes any Latin-script command.
    if arabic and not _technical(value, literal or command):
        return None, NOT_TECHNICAL
    line = f"Run {task} with {value}." if kind == "task" else _LINES[kind].format(value)
    return Candidate(line, USER if kind == "prefer" else MEMORY), None


def _reply(length: str) -> tuple[Candidate | None, str | None] | None:
    """ "keep replies concise", "give me detailed answers": a reply length, or no statement at all."""
    verbosity = re.fullmatch(_VERBOSITY, f"{length} replies")
    if verbosity is None:
        return None
    return Candidate(f"Prefer {'concise' if verbosity['c'] else 'detailed'} replies.", USER), None


def _unsafe(value: str) -> str | None:
    """Markup or a credential in a value: neither is a preference, and both would be pasted into every
    session. The guard sees the whole message too (`_safety_reason`); these are the shapes it does not
    judge, because a stored lesson may legitimately mention them."""
    if re.search(_MARKUP, value):
        return MARKUP
    if re.search(_CREDENTIAL, value):
        return CREDENTIAL
    return None


def _stored(subject: str, verb: str, raw: str, arabic: bool) -> tuple[Candidate | None, str | None]:
    path, _, quoting = _value(raw, "stored")
    if len(path) > _MAX_VALUE:
        return None, LONG_VALUE
    unsafe = quoting or _unsafe(f"{subject} {path}")
    if unsafe:
        return None, unsafe
    if arabic and re.search(_ARABIC, subject + path):
        return None, NOT_TECHNICAL
    if len(path.split()) != 1 or not re.fullmatch(_PATH, path):
        return None, NOT_A_PATH
    return Candidate(f"{subject[:1].upper()}{subject[1:]} {verb.lower()} stored under {path}.", MEMORY), None


def _value(raw: str, kind: str) -> tuple[str, bool, str | None]:
    """The value of a form, cleaned; whether it was one backticked literal (kept as is); and the reason
    its quoting refuses it, if it does."""
    value = raw.strip()
    head = re.match(_PREFER_HEAD, value) if kind == "prefer" else None
    value = value[head.end() :] if head else value
    if not re.fullmatch(_WRAPPED, value):
        value = _cut(value, _REASON_CUT)
        if kind in ("prefer", "uses"):
            value = re.sub(_AR_OVER, " over ", re.sub(_PARENTHETICAL, "", value))
        if kind == "prefer":
            value = re.sub(_DEFAULT_TAIL, "", value)
        value = _strip_end(value)
    quoting = _quoting(value, kind)
    wrapped = re.fullmatch(_WRAPPED, value)
    if wrapped:
        return " ".join(wrapped[1].split()), True, quoting
    return " ".join(re.sub(_CODE_SPAN, r"\2", value).split()), False, quoting


def _quoting(value: str, kind: str) -> str | None:
    """Quoted words are someone else's or an example, in any quote style: a preference or a fact with a
    quote or a backtick in it never counts. A command or a path may be marked as a literal with
    backticks, and a command may quote its own arguments (pytest -k 'not slow'); but a command that is
    all quoted, or carries typographic or unbalanced quotes, is prose or a broken paste."""
    if kind in ("prefer", "uses"):
        if "`" in value:
            return BACKTICKED
        return QUOTED if re.search(_QUOTE_MARK, value) else None
    if re.search(_TYPOGRAPHIC_QUOTE, value) or re.fullmatch(_WRAPPED_IN_QUOTES, value):
        return QUOTED
    outside = re.sub(_CODE_SPAN, "", value)
    if outside.count('"') % 2 or len(re.findall(r"(?<!\w)'|'(?!\w)", outside)) % 2 or outside.count("`"):
        return QUOTED
    return None


def _cut(value: str, pattern: str) -> str:
    """`value` up to the first match of `pattern` outside quotes and backticks."""
    spans = [m.span() for m in re.finditer(_SPAN, value)]
    for m in re.finditer(pattern, value):
        if not any(a <= m.start() < b for a, b in spans):
            return value[: m.start()]
    return value


def _technical(value: str, literal: bool) -> bool:
    """A name, path, model or command, not a phrase: one token; a command led by a known tool ("pnpm
    test"); words with technical marks ("GPT 5", "-m pytest"); or a Title Case name ("Visual Studio").
    Each side of a comparison ("pnpm over npm") must be one."""
    if re.search(_ARABIC, value):
        return False
    if literal:
        return True
    return all(map(_technical_words, re.split(_COMPARISON, value)))


def _technical_words(value: str) -> bool:
    words = value.split()
    if not all(re.fullmatch(_TOKEN, word) for word in words):
        return False
    return (
        len(words) == 1
        or words[0].casefold() in _TOOLS
        or any(re.search(_TECHNICAL_MARK, word) for word in words)
        or all(word[0].isupper() or word[0].isdigit() for word in words)
    )
