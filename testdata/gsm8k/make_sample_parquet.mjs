// Writes sample.parquet, the Parquet test file of package env, from the
// first 20 rows of test.jsonl.gz with hyparquet-writer (an implementation
// independent of the Go reader under test; snappy-compressed, as the hub's
// files are). Run from this directory:
//   npm install hyparquet-writer@0.17.0 && node make_sample_parquet.mjs
import { readFileSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import { parquetWriteFile } from 'hyparquet-writer'

const rows = gunzipSync(readFileSync('test.jsonl.gz')).toString('utf8')
  .split('\n').filter(l => l.trim() !== '').slice(0, 20).map(l => JSON.parse(l))
parquetWriteFile({
  filename: 'sample.parquet',
  columnData: [
    { name: 'question', data: rows.map(r => r.question), type: 'STRING' },
    { name: 'answer', data: rows.map(r => r.answer), type: 'STRING' },
    { name: 'idx', data: rows.map((_, i) => BigInt(i)), type: 'INT64' },
  ],
  rowGroupSize: 8,
})
