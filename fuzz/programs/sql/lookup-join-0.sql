CREATE TABLE orders (id BIGINT, currency STRING, amount DOUBLE, proc_time AS PROCTIME());
INSERT INTO priced
SELECT o.id, o.amount * r.rate AS price
FROM orders AS o
JOIN rates FOR SYSTEM_TIME AS OF o.proc_time AS r
ON o.currency = r.currency
