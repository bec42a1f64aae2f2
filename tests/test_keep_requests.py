"""Which prompts ask the agent to keep something (hooks/keep_requests.py): each phrase of the brief
in sentences and in any case, and the look-alikes that are not requests."""

from __future__ import annotations

import pytest

from hivelore.hooks.keep_requests import asks_to_keep

ASKS = [
    "remember this",
    "Remember this: the staging DB is reset every night",
    "ok, remember that the tests need a local postgres",
    "Please remember this for next time.",
    "can you remember that we pin numpy below 2?",
    "keep this in mind when you touch the checkout code",
    "Keep this.",
    "keep that for later, it cost us a day",
    "Don't forget that the API rate-limits at 100 rpm",
    "don’t forget: run migrations first",
    "and do not forget the feature flag",
    "save that for next time",
    "Save this to memory please",
    "note this down",
    "the fix was to clear the cache. remember it",
    "تذكر هذا",
    "تذكّر هذا: الاختبارات تحتاج قاعدة بيانات محلية",
    "احفظ هذا",
    "من فضلك احفظ هذا للمرة القادمة",
    "لا تنسَ أن الخادم يعيد التشغيل ليلاً",
    "اینو نگه دار",
    "این رو نگه‌دار برای دفعه بعد",
    "یادت باشه که تست‌ها به پستگرس نیاز دارند",
    "لطفا یادت بمونه",
]

NOT_ASKS = [
    "I don't remember this function",
    "do you remember this error?",
    "I remember that bug from last week",
    "keep this loop short",
    "keep it simple",
    "save this file and run the tests",
    "Save it as utf-8",
    "we should not forget-proof the retry logic",
    "the remembered value is stale",
    "lines to keep: this one",
    "لا أتذكر هذا",
    "احفظ هذا الملف",
    "یادم نیست",
    "این فایل را باز کن",
    "",
]


@pytest.mark.parametrize("prompt", ASKS)
@pytest.mark.parametrize("case", [str, str.upper, str.lower])
def test_a_request_to_keep_is_heard_in_any_case(prompt: str, case: object) -> None:
    assert asks_to_keep(case(prompt))  # type: ignore[operator]


@pytest.mark.parametrize("prompt", NOT_ASKS)
def test_a_look_alike_is_not_a_request(prompt: str) -> None:
    assert not asks_to_keep(prompt)


@pytest.mark.parametrize("prompt", ASKS)
def test_a_request_is_heard_inside_a_longer_prompt(prompt: str) -> None:
    assert asks_to_keep(f"The deploy failed again.\n{prompt}\nThen carry on with the refactor.")
