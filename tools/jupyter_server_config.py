"""Jupyter server settings for the course (``make lab`` passes this file; a workshop server passes
``tools/workshop_server_config.py``, which loads it; on JupyterHub, copy both into the servers' config folder and load
the workshop one, and copy ``tools/lab_settings/overrides.json`` into ``<prefix>/share/jupyter/lab/settings/``,
JupyterLab's own place for it, or next to the copied file as ``lab_settings/overrides.json``).

JupyterLab shows the kernel's state from every ``status`` message on IOPub, except those answering a request type the
server lists in ``untracked_message_types``. ipykernel 7 answers the ``create_subshell_request`` that JupyterLab's
widget manager sends the first time a widget appears while a cell runs (the live monitor's image) with a busy/idle pair
on IOPub — and that request type is missing from jupyter-server's default list, so JupyterLab shows "Idle" for the
rest of a cell that is still running. Observed with JupyterLab 4.6.6, jupyter-server 2.21.1, ipykernel 7.4.0; gone
with the subshell requests added below.
"""

from pathlib import Path

from jupyter_server.services.kernels.kernelmanager import MappingKernelManager

c = get_config()  # noqa: F821 - provided by the config loader

SUBSHELL_MESSAGES = [
    "create_subshell_request",
    "create_subshell_reply",
    "delete_subshell_request",
    "delete_subshell_reply",
    "list_subshell_request",
    "list_subshell_reply",
]
DEFAULT = list(MappingKernelManager.class_traits()["untracked_message_types"].default())
c.MappingKernelManager.untracked_message_types = DEFAULT + [m for m in SUBSHELL_MESSAGES if m not in DEFAULT]

# The course's JupyterLab settings (tools/lab_settings/overrides.json): no "Would you like to get notified about
# official Jupyter news?" popup over the corner of every projected page, and no update check. JupyterLab 4 reads
# overrides.json from its application settings directory (by default <prefix>/share/jupyter/lab/settings, empty in a pip
# install); pointing that directory at the course's copy needs no write into the environment. A learner's own choices in
# the Settings editor still win: they live in the user settings directory, which this leaves alone.
COURSE_SETTINGS = Path(__file__).resolve().parent / "lab_settings"
if COURSE_SETTINGS.is_dir():  # a copy of this file without the folder keeps JupyterLab's own settings directory
    c.LabApp.app_settings_dir = str(COURSE_SETTINGS)

# The course's style (tools/lab_custom/custom.css): printed output wraps at spaces instead of in the middle of a word.
COURSE_CSS = Path(__file__).resolve().parent / "lab_custom"
if COURSE_CSS.is_dir():
    c.LabApp.custom_css = True
    # ServerApp.static_custom_path is not configurable itself; the web application's settings, which it fills, are
    c.ServerApp.tornado_settings = {"static_custom_path": [str(COURSE_CSS)]}

# No culling here: this file is what make lab and a learner's own JupyterLab load, where an idle kernel is a learner
# who stepped away, with every variable and a trained model in it. A workshop server whose GPUs are shared loads
# tools/workshop_server_config.py instead, which loads this file and culls idle kernels.
