INSERT INTO items
SELECT o.id, t.item FROM orders AS o CROSS JOIN UNNEST(o.items) AS t (item)
