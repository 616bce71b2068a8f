/* fuzz_trace.c -- fuzz target for the trace reader: any bytes as a line; whatever it accepts must
 * be written back by c4_record_json and read again to the same record. */
#include <stdlib.h>
#include <string.h>

#include "c4_trace_json.h"
#include "c4_trace_read.h"
#include "fuzz.h"

static void must(int cond) {
  if (!cond) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct c4_record r, back;
  char err[256];
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
      "\"peer_dev\":0}"};
  if (i < 0 || i >= 3 || strlen(seeds[i]) > cap) return 0;
  memcpy(buf, seeds[i], strlen(seeds[i]));
  return strlen(seeds[i]);
}
