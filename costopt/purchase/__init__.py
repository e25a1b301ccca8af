"""Purchasing outputs that consume a solved result: Why lines, compare of vendor quotes,
rent-vs-buy, exports (xlsx/csv/json) and the HTML/Markdown report."""
