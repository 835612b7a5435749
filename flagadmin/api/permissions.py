"""DRF permission classes: every admin endpoint asks the caller's principal one question."""

from __future__ import annotations

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from flagadmin.api.errors import AuthenticationRequired, NoAccessError
from flagadmin.core import permissions as perms


def _principal(request: Request):
    user = request.user
    if user is None or not getattr(user, "is_authenticated", False):
        raise AuthenticationRequired()
    return user


class AdminApiPrincipal(BasePermission):
    """Any authenticated caller allowed on the admin API (users, personal and admin tokens)."""

    def has_permission(self, request: Request, view) -> bool:
        principal = _principal(request)
        if not getattr(principal, "is_admin_api_principal", False):
            needed = required_permission(view)
            if needed == perms.NONE:
                needed = None
            # The contract's sentence naming the permission, then why this caller lacks it.
            raise NoAccessError(
                needed,
                remark="This token is a client token, valid for the client API only; "
                "use an admin API token or a personal access token here.",
            )
        return True


def required_permission(view) -> str | None:
    """The permission a view action needs: `required_permissions[action]`, else
    `required_permission`, else None (any admin-API principal)."""
    by_action = getattr(view, "required_permissions", None) or {}
    action = getattr(view, "action", None)
    if action in by_action:
        return by_action[action]
    return getattr(view, "required_permission", None)


class HasRequiredPermission(AdminApiPrincipal):
    """Checks the view's required permission, scoped to the project in the URL if it has one."""

    def has_permission(self, request: Request, view) -> bool:
        super().has_permission(request, view)
        permission = required_permission(view)
        if permission is None or permission == perms.NONE:
            return True
        project_kwarg = getattr(view, "project_url_kwarg", None)
        project_id = view.kwargs.get(project_kwarg) if project_kwarg else None
        if not request.user.has_permission(permission, project_id=project_id):
            raise NoAccessError(permission)
        return True
