"""Hardware and prices: the catalog (typed, validated at load, cached), cloud instance facts, the
part filter (segment, lifecycle), the bill of materials and the cost of a design."""
