/* fuzz_trace.c -- fuzz target for the trace reader: any bytes as a line (whatever it accepts must
 * be written back by c4_record_json and read again to the same record), and any bytes after the
 * binary form's magic, read as a whole file (c4mon replay's reader), one record at a time and
 * many at a time through a mapping. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_trace_bin.h"
#include "c4_trace_json.h"
#include "c4_trace_read.h"
#include "fuzz.h"

static void must(int cond) {
  if (!cond) abort();
}

/* The bytes as the rest of a binary trace: records come out, a bad one ends it with an error. */
static void read_binary(const uint8_t *data, size_t size) {
  uint8_t *file = malloc(size + C4_TRACE_BIN_MAGIC_LEN);
  if (!file) return;
  memcpy(file, C4_TRACE_BIN_MAGIC, C4_TRACE_BIN_MAGIC_LEN);
  memcpy(file + C4_TRACE_BIN_MAGIC_LEN, data, size);
  FILE *f = fmemopen(file, size + C4_TRACE_BIN_MAGIC_LEN, "r");
  struct c4_trace_reader rd;
  if (f && c4_trace_open_stream(&rd, f) == 0) {
    must(rd.binary == 1);
    struct c4_record r;
    char err[256];
    int rc, errors = 0;
    size_t n = 0;
    while ((rc = c4_trace_next(&rd, &r, err, sizeof err)) != 0) {
      must(rc == 1 || (rc < 0 && strlen(err) > 0));
      errors += rc < 0;
      must(++n <= size + 1); /* every record takes at least one byte */
    }
    must(errors <= 1);
    c4_trace_close(&rd);
  }
  free(file);
}

/* The same bytes as a trace read through a mapping, many records at a time (c4mon replay's
 * path), against one at a time: the same records, then the same error or end. */
static void read_mapped(const uint8_t *data, size_t size) {
  uint8_t *file = malloc(size + C4_TRACE_BIN_MAGIC_LEN);
  if (!file) return;
  memcpy(file, C4_TRACE_BIN_MAGIC, C4_TRACE_BIN_MAGIC_LEN);
  memcpy(file + C4_TRACE_BIN_MAGIC_LEN, data, size);
  struct c4_trace_reader many = {.map = file,
                                 .map_len = size + C4_TRACE_BIN_MAGIC_LEN,
                                 .pos = C4_TRACE_BIN_MAGIC_LEN,
                                 .binary = 1},
                         one = many;
  static struct c4_record got[7], r;
  char err_many[256], err_one[256];
  for (;;) {
    memset(got, 0, sizeof got);
    int n = c4_trace_next_many(&many, got, 7);
    must(n >= 0 && n <= 7);
    for (int i = 0; i < n; i++) {
      memset(&r, 0, sizeof r);
      must(c4_trace_next(&one, &r, err_one, sizeof err_one) == 1);
      must(memcmp(&r, &got[i], sizeof r) == 0);
    }
    must(many.pos == one.pos && many.lineno == one.lineno);
    if (n == 7) continue;
    int a = c4_trace_next(&many, &got[0], err_many, sizeof err_many),
        b = c4_trace_next(&one, &r, err_one, sizeof err_one);
    must(a == b && (a >= 0 || !strcmp(err_many, err_one)));
    if (a == 0) break;
    if (a == 1) must(memcmp(&r, &got[0], sizeof r) == 0);
  }
  free(file); /* the readers hold no buffer of their own: nothing to close */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct c4_record r, back;
  char err[256];
  read_binary(data, size);
  read_mapped(data, size);
  int rc = c4_trace_parse_line((const char *)data, size, &r, err, sizeof err);
  must(rc == 0 || rc == 1 || strlen(err) > 0);
  if (rc != 1) return 0;
  json_t *j = c4_record_json(&r);
  must(j != NULL);
  char *line = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  must(c4_trace_parse_line(line, strlen(line), &back, err, sizeof err) == 1);
  must(memcmp(&r, &back, sizeof r) == 0);
  free(line);
  return 0;
}

/* The binary form of a transfer, a collective and a heartbeat after the magic: what the
 * mapped reads decode, for the mutations to start from. */
static size_t binary_seed(uint8_t *buf, size_t cap) {
  struct c4_record r[3] = {{.kind = C4_REC_XFER}, {.kind = C4_REC_COLL}, {.kind = C4_REC_RANK}};
  r[0].xfer = (struct c4_xfer_record){.version = C4_RECORD_VERSION,
                                      .conn_id = 7,
                                      .bytes = 1 << 20,
                                      .t_posted = 1,
                                      .t_first_byte = 2,
                                      .t_done = 3};
  strcpy(r[0].xfer.self.host, "node-1");
  strcpy(r[0].xfer.peer.host, "node-22");
  r[1].coll = (struct c4_coll_record){.comm = 5, .seq = 9, .nranks = 4, .t_arrive = 4};
  strcpy(r[1].coll.func, "AllReduce");
  r[2].rank = (struct c4_rank_record){.rank = 3, .t = 5, .event = C4_RANK_HB};
  strcpy(r[2].rank.host, "h");
  char *mem = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&mem, &len);
  if (!f) return 0;
  int ok = 1;
  for (int k = 0; k < 3; k++)
    ok &= c4_trace_bin_write(f, &r[k]) == 0;
  fclose(f);
  size_t n = ok && len <= cap ? len : 0;
  if (n) memcpy(buf, mem, n);
  free(mem);
  return n;
}

size_t c4_fuzz_seed(int i, uint8_t *buf, size_t cap) {
  static const char *const seeds[] = {
      "{\"v\":1,\"type\":\"comm\",\"comm\":\"00000000000000aa\",\"name\":\"w\",\"nranks\":2,"
      "\"rank\":1,\"nnodes\":1,\"host\":\"h\",\"pid\":7,\"t\":9}",
      "{\"v\":1,\"type\":\"coll\",\"comm\":null,\"rank\":0,\"nranks\":2,\"seq\":1,\"func\":"
      "\"AllReduce\",\"p2p\":false,\"count\":4,\"bytes\":16,\"root\":-1,\"datatype\":"
      "\"ncclFloat32\","
      "\"algo\":\"Ring\",\"proto\":\"LL\",\"nchannels\":2,\"nops\":2,\"t_arrive\":1,"
      "\"t_enqueued\":2,\"t_done\":null}",
      "{\"v\":1,\"type\":\"xfer\",\"comm\":null,\"rank\":0,\"peer\":1,\"host\":\"a\",\"peer_host\":"
      "\"b\",\"dir\":\"send\",\"bytes\":8,\"t_post\":1,\"t_first\":2,\"t_done\":3,\"conn\":"
      "\"0000000000000001\",\"seq\":0,\"tag\":0,\"status\":\"ok\",\"pid\":1,\"peer_pid\":2,\"dev\":"
      "0,"
      "\"peer_dev\":0}",
      "{\"v\":1,\"type\":\"path\",\"conn\":\"0000000000000001\",\"host\":\"a\",\"peer_host\":"
      "\"b\",\"sock\":1,\"nsocks\":2,\"src_port\":49152,\"bytes\":8,\"busy_ns\":2,\"t\":3}"};
  if (i == 4) return binary_seed(buf, cap);
  if (i < 0 || i >= 4 || strlen(seeds[i]) > cap) return 0;
  memcpy(buf, seeds[i], strlen(seeds[i]));
  return strlen(seeds[i]);
}
