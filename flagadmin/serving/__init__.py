"""The serving infrastructure: the production stack (nginx + gunicorn,
`python -m flagadmin.serving`), the PostgreSQL database backend, memory tuning and the client
address behind the local proxy."""
