"""OpenAPI: the client API's security scheme (a client token in the `Authorization` header)."""

from flagadmin.api.schema import ApiTokenScheme


class ClientTokenScheme(ApiTokenScheme):
    target_class = "client_api.authentication.ClientTokenAuthentication"
    name = "clientKey"
    description = (
        "A client API token `<project>:<environment>.<secret>`; admin and personal tokens get "
        "403 here."
    )
