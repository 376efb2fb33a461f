"""Where a served model's chat template comes from, and which one a conversation gets.

In order: the ``tokenizer.chat_template`` setting (a file path, or the template text itself), then the
model's own: a GGUF file's ``tokenizer.chat_template`` (and ``tokenizer.chat_template.<name>``), a folder's
chat_template.jinja (and additional_chat_templates/<name>.jinja), else its tokenizer_config.json. As in
transformers, a conversation that offers tools gets the template named ``tool_use`` when there is one.
"""

from __future__ import annotations

import pathlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from roles.tokenizer.chat_template import ChatTemplateError, compile_chat_template

SETTING = "tokenizer.chat_template"
_TOOL_USE = "tool_use"


@dataclass(frozen=True)
class ChatTemplates:
    default: str | None
    origin: str  # where the templates came from, as inspect and error messages name it
    named: Mapping[str, str] = field(default_factory=dict)

    def pick(self, offers_tools: bool) -> tuple[str | None, str]:
        """(template, where it came from) for a conversation."""
        if offers_tools and _TOOL_USE in self.named:
            return self.named[_TOOL_USE], f"{self.origin}, template {_TOOL_USE!r}"
        return self.default, self.origin

    def compile_all(self) -> None:
        """Compiles every template now (each is compiled once, by its first use otherwise); one that does
        not compile is left to the request that uses it, whose error names it."""
        for source in (self.default, *self.named.values()):
            if source:
                try:
                    compile_chat_template(source)
                except ChatTemplateError:
                    pass


def is_template_text(value: str) -> bool:
    """The setting holds a template rather than a path when it has Jinja's delimiters."""
    return "{{" in value or "{%" in value


def templates_from_setting(value: str) -> ChatTemplates:
    """The setting's template, read and compiled; ChatTemplateError naming the file (or the text's fault)."""
    if is_template_text(value):
        text, origin, what = value, f"{SETTING} (template text)", "the template text"
    else:
        path = pathlib.Path(value).expanduser()
        origin, what = f"{SETTING} file {path}", f"the file {value!r}"
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reason = "does not exist" if isinstance(error, FileNotFoundError) else f"is not readable: {error}"
            raise ChatTemplateError(
                f"{what} {reason} (give a path to a .jinja file, or the template text itself)"
            ) from None
    try:
        compile_chat_template(text)
    except ChatTemplateError as error:
        raise ChatTemplateError(f"{what} {error}") from None
    return ChatTemplates(text, origin)


def gguf_templates(template: str | None, named: Mapping[str, str], path: pathlib.Path) -> ChatTemplates:
    if template is None and not named:
        return ChatTemplates(None, f"none: {path} has no tokenizer.chat_template")
    return ChatTemplates(template, f"model file {path} (tokenizer.chat_template)", dict(named))


def folder_templates(folder: pathlib.Path, tokenizer_config: Mapping) -> ChatTemplates:
    jinja_file = folder / "chat_template.jinja"
    extra = sorted((folder / "additional_chat_templates").glob("*.jinja"))
    if jinja_file.is_file() or extra:
        named = {path.stem: path.read_text(encoding="utf-8") for path in extra}
        default = jinja_file.read_text(encoding="utf-8") if jinja_file.is_file() else named.get("default")
        return ChatTemplates(default, f"{jinja_file if jinja_file.is_file() else extra[0].parent}", named)
    template = tokenizer_config.get("chat_template")
    origin = f"{folder / 'tokenizer_config.json'} (chat_template)"
    if isinstance(template, list):  # named templates: [{"name": ..., "template": ...}, ...]
        named = {entry.get("name"): entry.get("template") for entry in template}
        return ChatTemplates(named.get("default"), origin, named)
    if template is None:
        return ChatTemplates(
            None, f"none: {folder} has no chat_template.jinja or tokenizer_config.json chat_template"
        )
    return ChatTemplates(template, origin)
