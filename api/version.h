/* api/version.h — the API group and version, and the path they serve
 * under: constants that every part of api/ may name without depending on
 * the kinds table. */
#ifndef API_VERSION_H
#define API_VERSION_H

#define API_GROUP "kernelindex.dev"
#define API_VERSION "v1alpha1"
#define API_GROUP_VERSION "kernelindex.dev/v1alpha1"
#define API_PREFIX "/apis/kernelindex.dev/v1alpha1"

#endif
