"""The services room: the HTTP and IPC machinery behind plugin listeners.

``collector`` gathers the listeners plugins ask for, ``thread`` serves one on
its own thread and event loop, ``process`` serves one in a child process and
relays its calls to the daemon. Services import the ops room (logging, limits)
and the floors, never the engine or the app.
"""
