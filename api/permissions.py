"""The API's permission classes: a role (``access.roles``) is a set of Django permissions, checked by name."""

from rest_framework.permissions import BasePermission


def permission(name: str) -> type[BasePermission]:
    """A permission class requiring the Django permission ``name`` (granted by a role's group)."""

    class HasPermission(BasePermission):
        message = f"your role does not allow this (it needs the permission {name})"

        def has_permission(self, request, view):
            return request.user.has_perm(name)

    return HasPermission
