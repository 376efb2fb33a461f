"""What a request's output must match, as one llguidance grammar the scheduler enforces token by token.

Sources: ``response_format`` (``json_object`` or ``json_schema``), the ``regex`` extension field, or the
``grammar`` extension field (llama.cpp's GBNF, ``root ::= ...``, or a Lark grammar, ``start: ...``). At most
one per request. The grammar is compiled and checked here, before anything reaches a scheduler, so a bad
schema, regex or grammar is a 400 that names the problem. JSON is written the way ``json.dumps`` writes it
(", " and ": ", no other whitespace): a model cannot pad its answer with endless blanks.
"""

from __future__ import annotations

from roles.tokenizer.openai_errors import OpenAIError

# llguidance is imported by the first request that asks for structured output: the front is ready without it.

JSON_STYLE = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
ANY_OBJECT = {"type": "object"}


def json_schema_grammar(schema: dict, param: str) -> str:
    """The grammar of JSON matching ``schema``; a 400 naming ``param`` when the schema is not usable."""
    from llguidance import LLMatcher

    try:
        grammar = LLMatcher.grammar_from_json_schema(schema, defaults=JSON_STYLE)
    except ValueError as error:
        raise OpenAIError(400, f"{param}: not a JSON schema: {error}", param, "invalid_value") from None
    return checked(grammar, param, "JSON schema")


def regex_grammar(pattern: str) -> str:
    from llguidance import LLMatcher

    return checked(LLMatcher.grammar_from_regex(pattern), "regex", "regex")


def text_grammar(text: str) -> str:
    """A GBNF grammar (llama.cpp's syntax) or a Lark grammar (llguidance's)."""
    import llguidance

    try:
        grammar = llguidance.grammar_from("grammar", text)
    except ValueError as error:
        raise OpenAIError(400, f"grammar: {error}", "grammar", "invalid_value") from None
    return checked(grammar, "grammar", "grammar")


def checked(grammar: str, param: str, what: str) -> str:
    from llguidance import LLMatcher

    is_error, messages = LLMatcher.validate_grammar_with_warnings(grammar)
    if is_error:
        problem = messages[0].strip() if messages else "rejected by the grammar engine"
        raise OpenAIError(400, f"{param}: invalid {what}: {problem}", param, "invalid_value")
    return grammar


def response_format_grammar(response_format) -> str | None:
    """``schemas.ResponseFormat`` -> grammar, or None for plain text."""
    if response_format is None or response_format.type == "text":
        return None
    if response_format.type == "json_object":
        return json_schema_grammar(ANY_OBJECT, "response_format")
    spec = response_format.json_schema
    if spec is None:
        raise OpenAIError(
            400,
            "response_format: type json_schema needs a json_schema object with a schema",
            "response_format.json_schema",
            "invalid_value",
        )
    schema = ANY_OBJECT if spec.schema_ is None else spec.schema_
    return json_schema_grammar(schema, "response_format.json_schema.schema")


def request_grammar(body) -> str | None:
    """The one grammar a completion request asks for (``schemas.SamplingRequest``), or None."""
    given = [
        name
        for name, value in (
            ("response_format", body.response_format),
            ("regex", body.regex),
            ("grammar", body.grammar),
        )
        if value is not None and not (name == "response_format" and value.type == "text")
    ]
    if len(given) > 1:
        raise OpenAIError(
            400, f"give at most one of response_format, regex and grammar; got {', '.join(given)}", given[1]
        )
    if body.regex is not None:
        return regex_grammar(body.regex)
    if body.grammar is not None:
        return text_grammar(body.grammar)
    return response_format_grammar(body.response_format)
