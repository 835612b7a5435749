"""The serving infrastructure: the production stack (nginx + granian,
`python -m flagadmin.serving`), the PostgreSQL database backend, memory tuning and the client
address behind the local proxy."""
