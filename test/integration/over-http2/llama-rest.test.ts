// ../llama-rest.test.ts again, every call a stream on one HTTP/2 connection, as the aggregator sends them.
process.env.FARM_TEST_HTTP2 = '1';
await import('../llama-rest.test.js');
