-- A buyer the browser cannot invent (I12 on public keys): the customer an order's units are counted against by the
-- purchase limit, when it is not the order's customer_id. A public key's customerId is whatever the page sends, so
-- without a buyer token its orders count by the client's address (`ip:<address>`, the same buyer the hold limit
-- counts); NULL: customer_id (server-side keys, and public keys presenting a buyer token for that customer).
ALTER TABLE orders ADD COLUMN counted_customer text;
