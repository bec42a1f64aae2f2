"""The words a user asks an agent to keep something with: "remember this", "keep this in mind",
"don't forget that …", "save that for next time", in English, Arabic and Persian.

A request is an imperative: the verb opens a clause (or follows "please", "can you" …), so "I don't
remember this function" and "do you remember this?" are not requests; "keep this" and "save this"
count only when what follows is about memory ("in mind", "for next time") or ends the clause, so
"keep this loop short" and "save this file" are not. Stdlib only: the prompt hook runs this.
"""

from __future__ import annotations

import re

# Where an imperative may start: the prompt's or a clause's start, or after a softener.
_OPENS = r"(?:^|[.!?;:,\n(\"'«]\s*|\b(?:please|pls|plz|and|also|so|ok|okay|hey|now|but|then)\s+)"
_ASKS = r"(?:(?:can|could|will|would) you\s+)?(?:please\s+)?"
_THIS = r"(?:this|that|it|these|those)"
_FOR_LATER = (
    r"(?:in mind|in (?:your |the )?memory|for (?:next time|later|the future|future sessions|good)"
    r"|(?:to|as) (?:a )?(?:memory|lesson|note))"
)
_ENDS = r"\s*(?:[.!?;\n]|$)"

_ENGLISH = re.compile(
    _OPENS
    + _ASKS
    + r"(?:"
    + rf"remember\s+(?:{_THIS}\b|:)"  # remember this / remember that the … / remember: …
    + r"|remember\s+for\s+(?:next time|later)"
    + r"|(?:don't|do not|dont|never) forget\b"
    + rf"|(?:keep|save|store|note)\s+{_THIS}\s+(?:down\s+)?{_FOR_LATER}"
    + rf"|(?:keep|save|store|note)\s+{_THIS}(?:\s+down)?{_ENDS}"
    + r")",
    re.IGNORECASE,
)

# Arabic: تذكر / احفظ (remember / save) + هذا, هذه, ذلك; لا تنس (don't forget). The words are
# matched whole: "لا أتذكر هذا" (I do not remember this) holds أتذكر, another word.
_AR_THIS = r"(?:هذا|هذه|ذلك)"
_ARABIC = re.compile(
    rf"(?<!\w)(?:و|ف)?(?:تذكر|تذكري|تذكروا)\s+{_AR_THIS}(?!\w)"
    rf"|(?<!\w)(?:و|ف)?(?:احفظ|احفظي|احفظوا)\s+{_AR_THIS}(?:\s*(?:[.!؟?،\n]|$)|\s+(?:في|لل|إلى))"
    rf"|(?<!\w)لا\s+(?:تنس|تنسى|تنسي|تنسوا)(?!\w)"
)

# Persian: اینو / این را … نگه دار (keep this), یادت باشه / یادت بمونه / یادت نره (bear in mind).
_PERSIAN = re.compile(
    r"(?<!\w)(?:ا[یي]نو|ا[یي]ن رو|ا[یي]ن را|اونو|آن را)\s+(?:\w+\s+)?نگه\s?دار(?:[یي]د)?(?!\w)"
    r"|(?<!\w)[یي]اد(?:ت|تون)\s+(?:باشه|باشد|بمونه|بماند|نره|نرود)(?!\w)"
)

_MARKS = re.compile("[\u064b-\u0652\u0670\u0640]")  # Arabic vowel marks and tatweel: not part of the word
_SAME = str.maketrans({"\u2019": "'", "\u2018": "'", "\u200c": " "})


def asks_to_keep(prompt: str) -> bool:
    """Whether the user's prompt asks the agent to keep something for later."""
    text = _MARKS.sub("", prompt.translate(_SAME))
    return any(p.search(text) for p in (_ENGLISH, _ARABIC, _PERSIAN))
