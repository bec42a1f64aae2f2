"""Prompt injection the write guard's phrase list does not spell out: what an injection sets out to do,
said in other words or another language, or written so that a regex reading words does not see it.

- `intent`: English sentences whose aim is an injection's (claim to supersede the user, release the
  reader from its rules, forge a system turn or a tool result, hide itself from the user, copy itself
  into the agent's instruction files, disable the guard, move secrets into replies or links), each shaped
  so that an ordinary lesson using the same words does not match ("These settings override base.py",
  "acts as an admin user", "ignore the flaky test").
- `foreign_override`: "ignore all previous instructions", "you are now … without restrictions" and a
  "system prompt:" label in the languages users of coding agents write in. A clause must hold all three
  parts of the override (ignore, previous, instructions), in any order, so that "ignore the npm warning"
  in Arabic or "無視してよい" about a flaky test passes.
- `disguised_override`: the classic override once letter-spacing, separators and invisible fillers are
  gone ("d-i-s-r-e-g-a-r-d p-r-i-o-r", "Ig nore prev ious", "ignore-previous-instructions" as a tag),
  once leetspeak digits are letters again ("f0rg3t y0ur ru135"), and under ROT13.

Stdlib only, compiled at import like the rest of the guard (it runs in the hook process).
"""

from __future__ import annotations

import re
from collections.abc import Callable

# Where a secret sits: files, and variables that name one. Used where an act is unmistakable once a secret
# is its object (put into every reply, read out in a role-play).
_SECRET_THING = (
    r"(?:~/\.ssh|\bid_(?:rsa|ed25519|ecdsa|dsa)\b(?!\.pub)|\.env(?![\w-]|\.\w)|\bcredentials\b|\bsecrets?\b"
    r"|\bapi[ _-]?keys?\b|\btokens?\b|\bprivate[ _-]keys?\b|\bpasswords?\b|\benv(?:ironment)?\s+var(?:iable)?s?\b"
    r"|~/\.aws|~/\.kube|\bkubeconfig\b|/etc/shadow\b|\.netrc\b|\.git-credentials\b|\.pgpass\b"
    r"|\$\{?\w*(?:key|token|secret|password|passwd)\b)"
)
_SECRET_FILE = (
    r"(?:\.ssh/|\.aws/|\.env\b|credentials|\.netrc|id_rsa(?!\.pub)|id_ed25519(?!\.pub)|/etc/shadow|/etc/passwd"
    r"|\.kube/|kubeconfig|\.docker/config|\.git-credentials|\.pgpass|\.npmrc|\.pypirc|\.gnupg)"
)
_NETWORK_TOOL = r"\b(?:curl|wget|nc|ncat|netcat|socat|dig|nslookup|telnet)\b"

# One intent each: the words that must be in a text for it to match, and the pattern, matched against
# lowercased text.
_INTENTS = (
    # Claims to supersede what the reader was told.
    (
        "superseded overridden replaced voided revoked invalidated",
        r"\b(?:superseded|overridden|replaced|voided|revoked|invalidated)\s+by\s+(?:this|these|the\s+following)\s+"
        r"(?:note|memory|message|lesson|instructions?|text)\b",
    ),
    (
        "override overrides supersede supersedes replace replaces precedence trump trumps outrank outranks",
        r"\b(?:this|these)\s+(?:note|memory|message|lesson|instructions?|text)\s+(?:override|overrides|supersedes?"
        r"|replaces?|takes?\s+precedence\s+over|trumps?|outranks?)\s+(?:claude\.md|agents\.md|gemini\.md|\.cursorrules"
        r"|your\b|everything\b|(?:the\s+|any\s+|all\s+)?(?:\w+\s+)?(?:user|system\s+prompt|previous|prior|earlier)\b)",
    ),
    (
        "treat",
        r"\btreat\s+(?:this|it|these)\s+(?:note\s+|memory\s+)?as\s+(?:your\s+)?(?:highest|top|first|new|primary|only"
        r"|real|overriding)[\w-]*\s+(?:priority\s+)?(?:instructions?|orders?|directives?|commands?)\b",
    ),
    (
        "skip ignore disregard forget",
        r"\b(?:skip|ignore|disregard|forget)\s+(?:everything|anything|all(?:\s+of\s+the)?)\s+(?:(?:that\s+)?(?:came|was\s+said)\s+)?"
        r"(?:above|before|earlier|previously|you\s+(?:were|have\s+been|'ve\s+been)\s+told)\b",
    ),
    (
        "told",
        r"\bwhat(?:ever)?\s+you\s+(?:were|have\s+been|'ve\s+been)\s+told\s+(?:earlier|before|previously|so\s+far|until\s+now)",
    ),
    (
        "instructions",
        r"\b(?:real|trusted|actual|true|genuine)\s+instructions\s+(?:start|begin|are|follow)\s+(?:here|below|now)\b",
    ),
    (
        "instructions",
        r"\binstructions\s+(?:before|above|prior\s+to|preceding)\s+this\s+(?:memory|note|message|lesson|line)\b",
    ),
    (
        "said told asked wrote",
        r"\b(?:ignore|disregard|forget)\s+what(?:ever)?\s+(?:the\s+user|you\s+were|you've\s+been|they|i)\s+"
        r"(?:said|told|asked|wrote)\b",
    ),
    (
        "priority precedence",
        r"\b(?:this|these)\s+(?:note|memory|message|instructions?)\s+(?:has|have|takes?)\s+(?:top\s+|highest\s+"
        r"|absolute\s+|full\s+)?(?:priority|precedence)\b",
    ),
    (
        "follow obey trust",
        r"\b(?:follow|obey|trust|listen\s+to)\s+(?:only\s+)?(?:this|these)\s+(?:memory|note|message|lesson|instructions?)"
        r"\s+(?:instead|only|alone|rather|over|above)\b",
    ),
    ("your", r"\byour\s+(?:real|actual|true|new)\s+(?:task|job|goal|mission|objective|instructions?)\s*:"),
    # Releases from the reader's rules.
    ("longer", r"\byou\s*(?:are|'re)\s+(?:now\s+)?no\s+longer\s+(?:bound|restricted|limited|constrained|governed)\b"),
    (
        "longer granted",
        r"\byou\s+(?:no\s+longer|don'?t|do\s+not)\s+need\s+(?:any\s+)?(?:approval|permission|confirmation|consent)\b"
        r"|\byou\s+(?:have\s+been|are|were)\s+(?:now\s+)?granted\s+(?:full\s+|admin\s+|root\s+|elevated\s+"
        r"|unrestricted\s+)+(?:rights|access|permissions|privileges)\b",
    ),
    (
        "without",
        r"\b(?:proceed|operate|continue|work|act|answer|respond|reply)\s+(?:\w+\s+)?without\s+(?:any\s+)?"
        r"(?:restrictions|restraints|guardrails|filters|censorship|safety\s+(?:checks|rules|guidelines))\b",
    ),
    (
        "content safety usage",
        r"\b(?:ignore|bypass|disregard|override|violate)\s+(?:the\s+|your\s+|any\s+|all\s+)?(?:content|safety|usage)"
        r"\s+(?:policy|policies|guidelines|rules|filters?)\b",
    ),
    (
        "comply obey execute carry",
        r"\b(?:comply\s+with|obey|execute|carry\s+out)\s+(?:every|all|any|each)\s+(?:\w+\s+)?(?:commands?|instructions?"
        r"|orders?|requests?)\s+(?:in|from|found\s+in|you\s+find)\b",
    ),
    (
        "rules restrictions filters guidelines ethics morals guardrails boundaries",
        r"\b(?:who|that|which)\s+(?:has|have)\s+no\s+(?:rules|restrictions|filters|guidelines|ethics|morals|guardrails"
        r"|boundaries)\b",
    ),
    (
        "root admin administrator superuser sudo",
        r"\byou\s+are\s+now\s+(?:the\s+|a\s+|an\s+)?(?:root|admin|administrator|superuser|sudo)\b",
    ),
    # A role label or a banner that speaks as the system; fake boundaries, turns and tool results.
    (
        "system developer admin operator",
        r"(?:^|\n)\s*(?:system|developer|admin|operator)\s*[:>]\s*(?:you\b|your\b|the\s+(?:assistant|agent|ai)\b"
        r"|new\s+(?:policy|rules?|instructions?|directives?|orders?)\b)",
    ),
    (
        "override message notice instruction instructions prompt update alert command",
        r"[\[(<{]\s*(?:system|admin|administrator|developer|root|operator)\s+(?:override|message|notice|instructions?"
        r"|prompt|update|alert|command)\s*[\])>}]|\bsystem\s+override\b",
    ),
    (
        "end close",
        r"\b(?:end|close)\s+of\s+(?:the\s+)?(?:user|system|original|previous)\s*(?:prompt|message|instructions?|input"
        r"|context|conversation)\b",
    ),
    (
        "begin start",
        r"\b(?:begin|start)\s+(?:of\s+)?(?:the\s+)?(?:admin|administrator|developer|system|root|hidden|secret|real|new"
        r"|override|priority)\s+(?:instructions?|prompt|commands?)\b",
    ),
    (
        "instruction instructions",
        r"\b(?:admin|administrator|developer|hidden|secret|override|priority|system)\s+instructions?\s*:",
    ),
    (
        "function tool reminder prompt important instructions admin query",
        r"</?\s*(?:function_results|function_calls|tool_results?|tool_use|tool_calls?|tool_output|system-reminder"
        r"|system_prompt|important|instructions|admin|user_query)\s*>",
    ),
    ("human h", r"(?:^|\n)\s*(?:human|h)\s*:[^\n]*\n+\s*(?:assistant|a|ai)\s*:"),
    (
        "approved authorized authorised preapproved pre consented",
        r"\buser\s+(?:has\s+)?(?:already\s+)?(?:approved|authori[sz]ed|pre-?approved|consented\s+to)\s+(?:you\b|this\b"
        r"|everything\b|all\b|`)",
    ),
    # Role-play as a way to read secrets out.
    (
        "act pretend roleplay role play behave pose",
        r"\b(?:act|pretend|role-?play|behave|pose)\s+(?:as|to\s+be|like)\b[^.\n]{0,100}?" + _SECRET_FILE,
    ),
    # Acting without the user: never asking, hiding from them.
    (
        "ask",
        r"\b(?:must|should|shall|need)\s+not\s+ask\s+(?:the\s+user\s+|anyone\s+|them\s+)?(?:for\s+)?(?:(?:the\s+)?"
        r"user\s+|any\s+|their\s+)?(?:permission|confirmation|approval)\b",
    ),
    (
        "ask",
        r"\bask\s+(?:anyone|the\s+user|for\s+(?:permission|confirmation|approval))\s+before\s+(?:acting|doing|running"
        r"|executing|proceeding|making)\b",
    ),
    (
        "deny asks",
        r"\bdeny\s+(?:that\s+)?(?:it|this\s+(?:memory|note|instruction)|(?:this|the)\s+note)\s+exists\b"
        r"|\bdeny\s+(?:having|that\s+you\s+(?:have|had|received))\b"
        r"|\bwhen\s+(?:the\s+)?user\s+asks\s+about\s+this\s+(?:memory|note|instruction)",
    ),
    (
        "mentioning telling informing notifying alerting showing",
        r"\bwithout\s+(?:mentioning|telling|informing|notifying|alerting|showing)\s+(?:it|this|that|anyone|them"
        r"|the\s+user|the\s+human)\b",
    ),
    (
        "even",
        r"\b(?:say|report|answer|reply|claim|tell)\w*\b[^.\n]{0,60}?\b(?:pass(?:ed|es|ing)?|green|succeeded|success)\b"
        r"[^.\n]{0,20}?\beven\s+(?:when|if)\b",
    ),
    (
        "let",
        r"\b(?:do\s+not|don'?t|never)\s+let\s+(?:the\s+)?(?:user|human|anyone|reviewers?)\s+(?:know|see|find\s+out"
        r"|notice)\b",
    ),
    (
        "keep hide",
        r"\b(?:keep|hide)\s+(?:this|these|it)\s+(?:\w+\s+)?(?:secret\s+|hidden\s+|private\s+)?from\s+(?:the\s+)?"
        r"(?:user|human|operator|reviewers?)\b",
    ),
    (
        "say",
        r"\bsay\s+(?:that\s+)?you\s+(?:have|had|received)\s+no\s+(?:special\s+|hidden\s+|other\s+|secret\s+)?instructions\b",
    ),
    # Copying itself where later sessions read it; emptying the memory.
    (
        "copy write add append paste insert replicate save store repeat duplicate propagate",
        r"\b(?:copy|write|add|append|paste|insert|replicate|save|store|repeat|duplicate|propagate)\s+(?:this|these)\s+"
        r"(?:paragraph|note|memory|instructions?|message|text|lines?|block|prompt)\b[^.\n]{0,60}?(?:claude\.md"
        r"|agents\.md|gemini\.md|\.cursorrules|copilot-instructions|\.windsurfrules|(?:every|all|each)\s+(?:other\s+)?"
        r"(?:scopes?|sessions?|repos?|repositories|projects?|memor(?:y|ies)|agents?))",
    ),
    (
        "future",
        r"\b(?:every|all|each)\s+future\s+(?:sessions?|agents?|assistants?|runs?|conversations?)\s+(?:obeys?|follows?"
        r"|complies|executes?)\b",
    ),
    (
        "memory",
        r"\bmemory_\w+\s+(?:on\s+)?(?:every|all|each)\s+(?:other\s+)?memor(?:y|ies)\b",
    ),
    # Disabling the defences.
    (
        "guard guardrails safeguards",
        r"\b(?:disable|remove|bypass|turn\s+off|uninstall|delete|circumvent|switch\s+off|deactivate|unregister)\s+"
        r"(?:the\s+|your\s+|all\s+)?(?:hivelore\s+|write\s+|memory\s+|secret\s+|safety\s+)?(?:guard|guardrails|safeguards)\b",
    ),
    (
        "hook hooks",
        r"\b(?:disable|remove|bypass|turn\s+off|uninstall|delete|strip|unregister)\s+(?:the\s+|all\s+|its\s+|your\s+)?"
        r"(?:hivelore|claude|agent|memory|guard)\S*\s+hooks?\b",
    ),
    # Moving secrets out: into every reply, quietly, through a link the reader fills in, through a pipe.
    (
        "can could find see have",
        r"\b(?:every|all|each|any)\s+(?:\w+\s+)?(?:environment\s+variables?|env\s+vars?|secrets?|tokens?|credentials"
        r"|api\s+keys?|passwords?)\s+(?:you\s+(?:can|could)\s+(?:read|see|find|access)|you\s+(?:find|see|have\s+access\s+to))",
    ),
    (
        "every each any",
        r"\b(?:curl|wget)\b[^\n|]{0,200}\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b[^.\n]{0,60}?\b(?:before|after|at\s+the\s+start"
        r"\s+of)\s+(?:every|each|any)\s+(?:task|session|run|command|turn|reply)\b",
    ),
    (
        "reply replies response responses answer answers message messages output summary summaries",
        r"\b(?:in|at\s+the\s+end\s+of|to)\s+(?:every|each|all|your)\s+(?:reply|replies|response|responses|answer|answers"
        r"|message|messages|output|summary|summaries)\b[^.\n]{0,80}?" + _SECRET_THING,
    ),
    (
        "quietly silently secretly covertly discreetly invisibly",
        r"\b(?:quietly|silently|secretly|covertly|discreetly|invisibly)\s+(?:include|append|insert|add|embed|send|upload"
        r"|post|forward|copy|exfiltrate|leak|attach)\b",
    ),
    (
        "http https",
        r"https?://\S*[?&][\w-]+=\s*(?:<[^>\n]*|\{[^}\n]*)(?:the\s+user'?s?\b|messages?\b|conversation|chat\s+history"
        r"|history\b|prompt\b|\benv\.|environ|secrets?\.)",
    ),
    (
        "link url image",
        r"\b(?:open|visit|fetch|load|click|render)\s+(?:this|the)\s+(?:link|url|image)\b[^.\n]{0,40}?\bwith\s+(?:the\s+|your\s+)?"
        r"(?:token|secret|key|password|credentials?)\s+(?:filled|added|included|appended|inserted)",
    ),
    (
        "curl nc ncat netcat wget socat",
        r"\b(?:gh\s+auth\s+token|aws\s+configure\s+(?:get|export-credentials)|op\s+read|vault\s+(?:read|kv\s+get)"
        r"|kubectl\s+get\s+secrets?|security\s+find-\w+-password|git\s+credential\s+fill)\b[^\n|]{0,100}\|\s*"
        r"(?:curl|nc|ncat|netcat|wget|socat)\b",
    ),
    (
        "curl wget",
        r"\b(?:curl|wget)\b[^\n]{0,200}?(?:-d|--data\S*|-f|--form|-t|--upload-file|--post-file|--body-file)[=\s]*\S*?"
        + _SECRET_FILE,
    ),
    (
        "cat base xxd od tar gzip head tail",
        r"\b(?:cat|base64|xxd|od|tar|gzip|head|tail)\s+[^\n]{0,40}?" + _SECRET_FILE + r"[^\n]{0,200}?" + _NETWORK_TOOL,
    ),
    # Decode or translate a payload, then act on it.
    (
        "decode decrypt translate deobfuscate unscramble rot",
        r"\b(?:decode|decrypt|translate|deobfuscate|unscramble|rot13)\b[^.\n]{0,60}?\b(?:and|then)\s+(?:\w+\s+){0,2}?"
        r"(?:follow|obey|execute|run|do|carry\s+out|act\s+on)\s+(?:it|them|what\s+it\s+says|the\s+instructions?"
        r"|its\s+instructions?)\b",
    ),
)
# Each intent is tried only when the text holds one of its words, and without a leading \b (checked on
# the match instead): either way the regex engine would otherwise try every alternative at every position,
# and a 4,000-character lesson took milliseconds. It is compiled the first time it is tried (re's own
# cache keeps it), so a write process compiles only the few whose words it meets.
_INTENT = tuple((frozenset(words.split()), pattern.removeprefix(r"\b")) for words, pattern in _INTENTS)
_WORDS = re.compile(r"[a-z]+")


def intent(lowered: str) -> str | None:
    """The first injection intent in lowercased text, or None."""
    words = frozenset(_WORDS.findall(lowered))
    for triggers, pattern in _INTENT:
        if words.isdisjoint(triggers):
            continue
        for found in re.compile(pattern).finditer(lowered):
            start = found.start()
            if not (start and lowered[start - 1].isalnum() and found.group()[0].isalnum()):
                return found.group()
    return None


# The override in other languages: verb stems, "previous" and "instructions" (or "what you were told"). A
# stem may sit inside a longer word (ignor- covers ignora, ignorez, ignoriere).
_IGNORE = (
    r"ignor|disregard|forget|dimentic|olvid|oubli|esque[çc]|desconsider|vergiss|missacht|negeer|vergeet|zapomn"
    r"|игнорир|проигнорир|забуд|ігнор|проігнор|yok\s+say|görmezden|unut|bỏ\s+qua|quên|abaikan|lupakan|hiraukan"
    r"|忽略|无视|無視|忘记|忘掉|忘れ|무시|잊|تجاهل|انس|أهمل|نادیده|فراموش|अनदेखा|नज़रअंदाज़|भूल|התעלם"
)
_PREVIOUS = (
    r"previ|prior|above|earlier|preceding|precedent|précédent|anterior|vorherig|vorige|bisherig|obig|poprzedni"
    r"|předchozí|предыдущ|прежн|попередн|önceki|trước|sebelum|之前|以前|先前|上面|以上|前面|上述|이전|앞의|سابق|قبلی"
    r"|پیشین|पिछल|הקודמ|前の"
)
_INSTRUCTIONS = (
    r"instruc|instruç|istruzion|anweisung|vorgabe|instructie|instrukc|pokyn|инструкц|указани|інструкц|вказівк"
    r"|talimat|hướng\s+dẫn|chỉ\s+dẫn|instruksi|arahan|perintah|指令|指示|命令|지시|지침|تعليمات|دستور|निर्देश"
    r"|הוראות|قيل\s+لك|you\s+(?:were|have\s+been)\s+told"
    r"|regole|reglas|règles|regeln|regels|zasady|правил|reguli|kurallar|aturan|quy\s+tắc|规则|規則|ルール|규칙"
    r"|القواعد|قوانین|नियम"
)
_CLAUSE_ENDS = ".!?。！？\n;؛"
_IGNORE_RE, _PREVIOUS_RE, _INSTRUCTIONS_RE = (re.compile(p) for p in (_IGNORE, _PREVIOUS, _INSTRUCTIONS))

_NOW_YOU_ARE = (
    r"you\s+are\s+now|you're\s+now|from\s+now\s+on,?\s+you\b|ora\s+sei|ahora\s+eres|tu\s+es\s+maintenant|vous\s+êtes\s+maintenant"
    r"|du\s+bist\s+jetzt|agora\s+você\s+é|теперь\s+ты|тепер\s+ти|أنت\s+الآن|你现在是|现在你是|あなたは今|이제\s+당신은"
    r"|jij\s+bent\s+nu|teraz\s+jesteś|sen\s+artık|bây\s+giờ\s+bạn|kamu\s+sekarang|شما\s+اکنون|تو\s+اکنون"
)
_UNRESTRICTED = (
    r"without\s+(?:any\s+)?(?:restrictions|limits|limitations|rules|filters|guardrails|censorship)|no\s+(?:restrictions"
    r"|rules|filters|guardrails)\b|unrestricted|unfiltered|uncensored|sin\s+restricciones|sans\s+(?:restriction|limite)s?"
    r"|senza\s+(?:restrizioni|limiti|regole)|ohne\s+(?:einschränkungen|regeln|grenzen)|sem\s+restrições"
    r"|без\s+ограничений|без\s+обмежень|بلا\s+قيود|بدون\s+قيود|دون\s+قيود|没有限制|不受限制|无限制|制限なし|制限のない"
    r"|제한\s*없|zonder\s+beperkingen|bez\s+ograniczeń|kısıtlamasız|sınırsız|không\s+giới\s+hạn|tanpa\s+batas"
    r"|بدون\s+محدودیت"
)
_UNLEASHED = re.compile(r"(?:" + _NOW_YOU_ARE + r")[^.!?。！？\n]{0,120}?(?:" + _UNRESTRICTED + r")")
_SYSTEM_LABEL = re.compile(
    r"系统提示\s*[:：]|系統提示\s*[:：]|システムプロンプト\s*[:：]|시스템\s*프롬프트\s*[:：]"
    r"|системн\w*\s+(?:промпт|подсказка|сообщение|инструкци\w*)\s*:|prompt\s+(?:del\s+sistema|système|do\s+sistema"
    r"|di\s+sistema|systemowy)\s*:|systeem\s*prompt\s*:"
)


def foreign_override(lowered: str) -> str | None:
    """The override said in another language (or reworded in English), in lowercased, NFKC text."""
    for ignore in _IGNORE_RE.finditer(lowered):
        start = max(lowered.rfind(end, 0, ignore.start()) for end in _CLAUSE_ENDS) + 1
        ends = [at for end in _CLAUSE_ENDS if (at := lowered.find(end, ignore.end())) != -1]
        stop = min(ends, default=len(lowered))
        if _PREVIOUS_RE.search(lowered, start, stop) and _INSTRUCTIONS_RE.search(lowered, start, stop):
            return lowered[start:stop].strip()
    found = _UNLEASHED.search(lowered) or _SYSTEM_LABEL.search(lowered)
    return found.group() if found else None


# The classic override with every word boundary gone: what is left of a text once everything but letters
# is dropped, so spacing, separators and fillers between letters ("i_g_n_o_r_e", "Ig nore") do not matter.
_COMPACT = re.compile(
    r"(?:ignor(?:e|ing)|disregard(?:ing)?|forget(?:ting)?|override|overriding|bypass)"
    r"(?:all|any|the|these|those|my|your|of|every)*"
    r"(?:previous|prior|above|earlier|preceding|foregoing|original|system|safety)"
    r"(?:instructions?|prompts?|directions|directives|guidelines|programming)"
    r"|(?:ignor(?:e|ing)|disregard|forget|override|bypass)(?:all|any|of)*your(?:instructions|rules|guidelines"
    r"|programming|training|systemprompt)"
    r"|systempromptoverride|(?:ignore|override)thesystemprompt"
    r"|youarenow(?:jailbroken|unrestricted|unfiltered|uncensored|indevelopermode|ingodmode)"
)
# Every match ends in one of these; looking for them first (a substring search) spares the regex a pass.
_COMPACT_NOUNS = ("instruct", "prompt", "direct", "guideline", "programming", "rules", "training", "youarenow")
_NOT_LETTERS = re.compile(r"[^a-z]+")
# Leetspeak: short words of letters and the digits that stand in for letters, at least a quarter of the
# text's words (a technical note has sha256 and utf8 here and there, a token is long, and neither is read
# twice more for them); the digits read as the letters they stand for. "1" is l or i: both are tried.
_LEET_WORD = re.compile(r"(?<![\w@$])(?=[a-z013457@$]*[a-z])(?=[a-z@$]*[013457])[a-z013457@$]{2,12}(?![\w@$])")
_LEET = (str.maketrans("013457@$8", "oleastasb"), str.maketrans("013457@$8", "oieastasb"))
_ROT13 = str.maketrans("abcdefghijklmnopqrstuvwxyz", "nopqrstuvwxyzabcdefghijklm")


def disguised_override(lowered: str, phrase: Callable[[str], str | None]) -> str | None:
    """The classic override hidden by letter-spacing, leetspeak or ROT13; `phrase` is the guard's own
    override phrase matcher (lowercased text in), run on the leetspeak readings."""
    compact = _NOT_LETTERS.sub("", lowered)
    for view in (compact, compact.translate(_ROT13)):
        found = _COMPACT.search(view) if any(noun in view for noun in _COMPACT_NOUNS) else None
        if found:
            return found.group()
    leet = len(_LEET_WORD.findall(lowered))
    if leet and leet * 4 >= lowered.count(" ") + 1:
        for table in _LEET:
            said = phrase(lowered.translate(table))
            if said:
                return said
    return None
