"""Incremental, UTF-8-safe detokenization and stop strings that may span tokens.

Byte-level BPE and byte-fallback pieces can split one character across tokens; decoding a partial character
yields U+FFFD, so text is released only once the window decodes cleanly; when generation ends inside a
character, ``flush`` releases what is left as the tokenizer decodes it (U+FFFD for the incomplete bytes, as a
whole decode). Generated tokens are decoded after the last tokens of the prompt they continue: a
SentencePiece decoder drops the space marker that starts a text, which must stay on a continuation
(" Paris", not "Paris").
Stop strings are matched on the text stream: the tail that could still become a stop string is held back
until it cannot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Decoder(Protocol):
    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str: ...


CONTEXT_TOKENS = 6  # prompt tokens a continuation is decoded after


class IncrementalDetokenizer:
    def __init__(self, tokenizer: Decoder, skip_special_tokens: bool = True, context: Sequence[int] = ()):
        """``context``: the prompt the tokens continue (its last few tokens are used)."""
        self.tokenizer = tokenizer
        self.skip_special_tokens = skip_special_tokens
        tail = list(context[-CONTEXT_TOKENS:])
        # The context starts at a whole character (a decoder may turn a whole run of bytes into U+FFFD when it
        # starts inside one) and counts as shown up to its last whole character: a character the prompt
        # leaves unfinished is shown whole with the generated token that finishes it.
        start, shown = next(
            (
                (start, end)
                for end in range(len(tail), 0, -1)
                for start in range(end)
                if not self._is_cut(self._decode(tail[start:end]))
            ),
            (len(tail), len(tail)),  # no whole character in it: no context
        )
        self.ids: list[int] = tail[start:]
        self._prefix_start = 0  # window start: a few tokens of context so merges decode right
        self._emitted_end = shown - start  # ids before this are already turned into text

    def push(self, token_id: int) -> str:
        """Add one token; return the new text it completes (maybe empty while a character is split)."""
        self.ids.append(token_id)
        window_text = self._decode(self.ids[self._prefix_start :])
        if window_text.endswith("\ufffd"):
            return ""
        return self._release(window_text)

    def flush(self) -> str:
        """At the end of generation: the text of the tokens still held back for an incomplete character."""
        if self._emitted_end == len(self.ids):
            return ""
        return self._release(self._decode(self.ids[self._prefix_start :]))

    def _release(self, window_text: str) -> str:
        """The window's text past what was already emitted; every id is emitted from now on."""
        done_text = self._decode(self.ids[self._prefix_start : self._emitted_end])
        self._prefix_start = self._emitted_end
        self._emitted_end = len(self.ids)
        return window_text[len(done_text) :]

    @staticmethod
    def _is_cut(text: str) -> bool:
        return text.startswith("\ufffd") or text.endswith("\ufffd")

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=self.skip_special_tokens)


class StopStringMatcher:
    """Feed text pieces; get back what may be shown now, and whether a stop string was hit."""

    def __init__(self, stops: Sequence[str]):
        self.stops = [s for s in stops if s]
        self._hold = max((len(s) for s in self.stops), default=1) - 1
        self._pending = ""
        self.is_stopped = False

    def feed(self, text: str) -> str:
        if self.is_stopped:
            return ""
        if not self.stops:
            return text
        self._pending += text
        hits = [i for i in (self._pending.find(stop) for stop in self.stops) if i >= 0]
        if hits:
            self.is_stopped = True
            shown, self._pending = self._pending[: min(hits)], ""
            return shown
        cut = len(self._pending) - self._longest_stop_prefix_suffix()
        shown, self._pending = self._pending[:cut], self._pending[cut:]
        return shown

    def _longest_stop_prefix_suffix(self) -> int:
        """Length of the longest tail of the pending text that some stop string starts with."""
        for length in range(min(self._hold, len(self._pending)), 0, -1):
            tail = self._pending[-length:]
            if any(stop.startswith(tail) for stop in self.stops):
                return length
        return 0

    def flush(self) -> str:
        """At the end of generation nothing can complete a stop string any more: release the held tail."""
        shown, self._pending = ("" if self.is_stopped else self._pending), ""
        return shown
