"""Sphinx's configuration for the course's website (copied beside the staged pages by ``tools/website.py``).

Everything a page uses is served from the site: myst-nb renders the chapters from their stored run (it executes
nothing: the run is the handouts'), sphinx-book-theme lays out the pages and brings its own fonts and icons, math is
MathML (``sitekit.mathml``) instead of MathJax from a CDN, and the ipywidgets script that myst-nb would load from a CDN
is switched off (the widgets are already drawn in their final state). The theme's own launch and repository buttons
are off: the chapter's bar (``sitekit.pages``) carries Colab, Kaggle and the download, from links made at build time.
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SETTINGS = json.loads((HERE / "site.json").read_text(encoding="utf-8"))
sys.path.insert(0, SETTINGS["kit"])

project = "gpulab"
author = "the gpulab authors"
html_title = "gpulab: PyTorch on GPUs"
extensions = ["myst_nb", "sitekit.mathml", "sphinx.ext.githubpages"]  # githubpages: .nojekyll (keeps _static/)
exclude_patterns = ["_build", "_extra", "**.ipynb_checkpoints", "site.json"]
html_extra_path = ["_extra"]
html_static_path = ["_static"]
html_css_files = ["site.css"]
html_js_files = ["search.js"]  # search snippets from the article, around the query's words; results land on them
# the theme writes data-mode="{{ default_mode }}": left empty, its script logs "Got invalid theme mode" on every page
html_context = {"default_mode": "auto"}
html_favicon = "_static/favicon.svg"  # served here: a browser asks for one on every site
html_math_renderer = "mathml"
html_theme = "sphinx_book_theme"
html_theme_options = {
    "use_download_button": False,  # the chapter's bar offers the committed notebook; the staged one is the run
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    "navigation_with_keys": False,
    # the ledger's table needs the width: its section list (a heading per source article) goes
    "secondary_sidebar_items": {"**": ["page-toc"], "notebooks/claims_ledger": []},
    "extra_footer": f"<p>{SETTINGS['made']}</p>",
}
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None
nb_execution_mode = "off"
nb_ipywidgets_js = {}
nb_merge_streams = True
nb_output_stderr = "show"
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
suppress_warnings = ["myst.header", "misc.highlighting_failure"]
pygments_style = "default"
