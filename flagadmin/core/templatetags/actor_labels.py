"""`{% load actor_labels %}`: the admin's one label per actor in templates."""

from __future__ import annotations

from django import template

from flagadmin.core.actors import actor_label as label_of

register = template.Library()


@register.filter
def actor_label(user) -> str:
    """`{{ action.user|actor_label }}`: a person's email else username, as audit events and
    the audit log name them (flagadmin.core.actors.actor_label)."""
    return label_of(user)
