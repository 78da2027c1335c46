"""Development and test process managers: local nats-server and clusters, dev TLS
certificates, child-process announcements.

Not SDK surface: no runtime module (the services, the decision core, the feed) imports this
package; tests/test_layering.py keeps it so.
"""
