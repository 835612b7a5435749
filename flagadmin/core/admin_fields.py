"""Form fields the admins share."""

from __future__ import annotations

from typing import Any

from django import forms

from flagadmin.core.names import has_control_character, is_url_friendly


class LinesField(forms.CharField):
    """A JSON list of strings edited as one string per line, not as JSON text (SSO group names
    hold spaces and commas; `okta-qa` is a name, not invalid JSON). Empty lines and repeats
    are dropped."""

    widget = forms.Textarea(attrs={"rows": 4, "cols": 60})

    def __init__(self, *, encoder: Any = None, decoder: Any = None, **kwargs: Any) -> None:
        # A model JSONField passes its encoder and decoder; lines need neither.
        kwargs.pop("max_length", None)
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> str:
        if isinstance(value, list):
            return "\n".join(str(item) for item in value)
        return value or ""

    def to_python(self, value: Any) -> list[str]:
        if isinstance(value, list):
            return value
        lines = (line.strip() for line in (value or "").splitlines())
        return list(dict.fromkeys(line for line in lines if line))

    def has_changed(self, initial: Any, data: Any) -> bool:
        return self.to_python(data) != (initial or [])


def refuse_control_characters(value: str) -> None:
    """The API's rule for a name shown whole in lists, pages and logs (a token's, a project's),
    as a form validator."""
    if has_control_character(value):
        raise forms.ValidationError(
            "Must not contain control characters (\\u0000 to \\u001f, \\u007f).", code="control"
        )


def require_url_friendly(value: str) -> None:
    """The API's rule for a name used in URLs and in client tokens (a project's id, an
    environment's name), as a form validator: a token holding a control character cannot even
    be sent in a header."""
    if not is_url_friendly(value):
        raise forms.ValidationError(
            "Must be URL friendly: only the characters A-Z a-z 0-9 - _ . ! ~ * ' ( ), "
            "and not . or ..",
            code="not_url_friendly",
        )
