INSERT INTO top_items
SELECT category, item, price FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY category ORDER BY price DESC) AS rownum
  FROM items
) WHERE rownum <= 3
