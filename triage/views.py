from django.contrib.auth.decorators import login_required
from django.shortcuts import render


@login_required
def landing(request):
    """Where a signed-in user starts: the API, its documentation and the admin."""
    return render(request, "landing.html")
