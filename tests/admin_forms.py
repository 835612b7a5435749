"""Post an admin change form as a browser would: every field with the value the page shows,
then the changes a test makes."""

from __future__ import annotations

from django import forms


def _form_fields(form: forms.BaseForm) -> dict[str, object]:
    data: dict[str, object] = {}
    for name, field in form.fields.items():
        bound = form[name]
        value = bound.value()
        if isinstance(field, forms.BooleanField):
            if value:
                data[bound.html_name] = "on"
            continue
        if value is None:
            continue
        if isinstance(field, forms.SplitDateTimeField):
            continue  # left empty by the tests that post these pages
        data[bound.html_name] = value
    return data


def change_form_data(response, **changes: object) -> dict[str, object]:
    """The data the admin page in `response` would post, with `changes` (html names) applied."""
    data = _form_fields(response.context["adminform"].form)
    formsets = [inline.formset for inline in response.context["inline_admin_formsets"]]
    # Pages with formsets of their own (the strategy editor's constraints and variants).
    formsets += response.context.get("editor_formsets", [])
    for formset in formsets:
        data.update(_form_fields(formset.management_form))
        for form in formset.forms:
            data.update(_form_fields(form))
    data.update(changes)
    return {key: value for key, value in data.items() if value is not None}


def editor_rows(prefix: str, rows: list[dict[str, object]]) -> dict[str, object]:
    """Rows of a page's own formset (the strategy editor's `constraints` and `variants`) as
    the page posts them, replacing what it showed: each row's fields by their names."""
    data: dict[str, object] = {f"{prefix}-TOTAL_FORMS": len(rows), f"{prefix}-INITIAL_FORMS": 0}
    for index, row in enumerate(rows):
        data.update({f"{prefix}-{index}-{field}": value for field, value in row.items()})
    return data
