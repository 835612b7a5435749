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
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        data.update(_form_fields(formset.management_form))
        for form in formset.forms:
            data.update(_form_fields(form))
    data.update(changes)
    return {key: value for key, value in data.items() if value is not None}
