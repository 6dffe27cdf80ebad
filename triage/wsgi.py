import gc
import os

from django.core.wsgi import get_wsgi_application

from triage.security import quiet_server_header

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "triage.settings")
application = get_wsgi_application()
quiet_server_header()
# What start-up made (settings, apps, models) lives as long as the process: frozen, the collector's full passes no
# longer walk its 100,000-odd objects. A page that makes many objects (the 1,024-node attempt page: 10,000 events)
# set off such passes, 20 to 40 ms each (docs/performance.md, "Pages: the 1,024-node attempt page").
gc.collect()
gc.freeze()
