"""What ``tools/handouts.py`` is made of: run a chapter into a temporary copy, make its outputs printable, export HTML
with local styles, print it to PDF with Chromium, and check the printed pages. ``static`` and ``editions`` serve the
website as well (``tools/sitekit``), whose engine (Sphinx, myst-nb) renders and themes the pages but draws no widget
state and keeps no run for the handouts.

    run.py        execute a copy of a chapter (fast or full sizes), widget state kept, the committed file untouched;
                  each run kept in build/executed/, the one run the website (tools/website.py) reads too
    static.py     widgets → their final state as plain HTML; the maintainers' settings lines left out
    editions.py   student edition (solution cells left out) and instructor edition
    export.py     HTML for print: nbconvert with a local template and print CSS, math as MathML, code sized to the
                  page (the website's pages are Sphinx's: tools/sitekit)
    printing.py   Chromium prints the HTML (A4 or Letter); pdftoppm renders the pages that the checks look at
    cheatsheet.py the one-page cheat sheet (cheatsheet.html beside it)
"""
