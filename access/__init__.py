"""Who may do what: the roles (Django groups) and the permissions each grants. Below every app: the apps'
migrations grant the roles the permissions of the models they add."""
