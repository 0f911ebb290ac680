/* server/http.h — the libmicrohttpd front end: a thread pool on epoll. */
#ifndef SERVER_HTTP_H
#define SERVER_HTTP_H

#include "server/config.h"
#include "server/router.h"
#include "server/watch.h"

typedef struct http_server http_server;

/* Starts listening on cfg->listen and answering through rt (borrowed;
 * must outlive the server). */
int http_start(http_server **out, const ki_config *cfg, router *rt,
	watch_hub *hub);
/* The port actually bound (useful with port 0). */
unsigned http_port(const http_server *s);
/* Stops accepting, lets requests in progress finish, and frees. */
void http_stop(http_server *s);

#endif
