"""What ``tools/website.py`` is made of: the course's pages staged as a Sphinx project, which Sphinx with myst-nb and
sphinx-book-theme builds into a static site (``make site``).

    links.py    the repository's URL (from the git remote), the Open in Colab / Open in Kaggle links, Colab's first cell
    pages.py    the pages: each chapter's run (shared with the handouts), the workshop guide, docs/, the claims ledger,
                the home page; links rewritten to where their targets are on the site
    conf.py     Sphinx's configuration (copied beside the staged pages): myst-nb renders, the book theme lays out
    mathml.py   math as MathML (the browser draws it), so no page loads MathJax from a CDN
    site.css    the few styles the theme lacks (the chapter's launch bar, the recorded GPU outputs)
    search.js   search snippets from the article around the query's words, and results that land on them
    quiet       which run a timing chapter's page shows (never one its own line calls not quiet)
"""
