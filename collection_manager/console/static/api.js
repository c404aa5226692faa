// The interactive API page: Swagger UI over the server's own OpenAPI document. Behind a
// token, every request (the document's too) carries the one the console was given in this
// tab (sessionStorage "cm-token"); without one, Swagger UI's Authorize takes it.
"use strict";

window.addEventListener("DOMContentLoaded", () => {
  const token = sessionStorage.getItem("cm-token");
  window.ui = SwaggerUIBundle({
    url: "/api/v1/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    requestInterceptor: (request) => {
      if (token && !request.headers.Authorization) {
        request.headers.Authorization = `Bearer ${token}`;
      }
      return request;
    },
  });
});
