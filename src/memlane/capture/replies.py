"""The text of a reply kept without a transcript, written and read back in one place.

Agents without a transcript (Codex, Gemini, Cursor, Windsurf) hand a turn's final answer
to their Stop hook; :func:`reply_text` stores it as a turn that reads like a transcript's:
``user: <prompt>\\nassistant: <answer>`` (the prompt line only when the session has one),
so a later question in the prompt's words finds the answer. :func:`reply_answer` gives
the answer back from that text (the session summary's last answer): it starts after the
first ``\\nassistant: ``, which the prompt never holds (a prompt line starting so is
stored indented by a space; the answer is stored as written).
"""

from memlane import memories

# A reply shows the prompt it answers, cut to this length.
REPLY_PROMPT_CHARS = 600
_PROMPT_LABEL = "user: "
_ANSWER_LABEL = "assistant: "
_SEPARATOR = "\n" + _ANSWER_LABEL


def reply_text(asked: str | None, answer: str) -> str:
    """The stored text of ``answer`` to the prompt ``asked`` (None: no prompt known).

    Both are filtered already: a rule reading a line's start (the output after a
    `$ pass show` line) must see the answer as written, before the label goes in front.
    """
    text = _ANSWER_LABEL + answer
    if asked:
        shown = memories.clip(asked, REPLY_PROMPT_CHARS).replace(_SEPARATOR, "\n " + _ANSWER_LABEL)
        return f"{_PROMPT_LABEL}{shown}\n{text}"
    return text


def reply_answer(text: str) -> str:
    """The answer in a stored reply's ``text`` (:func:`reply_text`); ``text`` itself when it
    holds no answer label."""
    if text.startswith(_ANSWER_LABEL):
        return text[len(_ANSWER_LABEL) :]
    _asked, found, answer = text.partition(_SEPARATOR)
    return answer if found else text
