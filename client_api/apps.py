from django.apps import AppConfig


class ClientApiConfig(AppConfig):
    name = "client_api"
    verbose_name = "Client API (SDKs)"
